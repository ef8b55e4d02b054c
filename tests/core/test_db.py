"""core.db: the one way many rows are written, on PostgreSQL (COPY) and SQLite (bulk)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from aggregation.models import CriterionLabel
from annotation.models import Sample
from core.db import JsonText, RowsInserter, insert_rows, read_int_columns, update_rows

pytestmark = pytest.mark.django_db
NOW = timezone.now()

FIELDS = (
    "sample_id",
    "criterion_id",
    "outcome",
    "preference",
    "votes_a",
    "votes_b",
    "votes_tie",
    "vote_ids",
    "computed_at",
)
STORED = FIELDS[:-1]


def _samples(project, n):
    return [
        Sample.objects.create(
            project=project, external_id=f"s{i}", question="q", response_a="a", response_b="b"
        )
        for i in range(n)
    ]


def test_insert_rows_writes_every_value_and_both_json_forms(project):
    samples = _samples(project, 3)
    criterion = project.criteria.first()
    rows = [
        (samples[0].pk, criterion.pk, "kept_unanimous", "A", 3, 0, 0, [1, 2, 3], NOW),
        (
            samples[1].pk,
            criterion.pk,
            "kept_majority_tie",
            "B",
            0,
            2,
            1,
            JsonText("[4, 5, 6]"),
            NOW,
        ),
        (samples[2].pk, criterion.pk, "dropped_split", "", 1, 1, 1, JsonText("[]"), NOW),
    ]
    with transaction.atomic():
        assert insert_rows(CriterionLabel, FIELDS, iter(rows)) == 3
    stored = list(CriterionLabel.objects.order_by("sample_id").values_list(*STORED))
    assert stored == [
        (samples[0].pk, criterion.pk, "kept_unanimous", "A", 3, 0, 0, [1, 2, 3]),
        (samples[1].pk, criterion.pk, "kept_majority_tie", "B", 0, 2, 1, [4, 5, 6]),
        (samples[2].pk, criterion.pk, "dropped_split", "", 1, 1, 1, []),
    ]


def test_update_rows_changes_only_the_given_rows_and_fields(project):
    samples = _samples(project, 3)
    criterion = project.criteria.first()
    with transaction.atomic():
        insert_rows(
            CriterionLabel,
            FIELDS,
            [(s.pk, criterion.pk, "kept_unanimous", "A", 3, 0, 0, [s.pk], NOW) for s in samples],
        )
    ids = dict(CriterionLabel.objects.values_list("sample_id", "pk"))
    with transaction.atomic():
        written = update_rows(
            CriterionLabel,
            ("preference", "votes_a", "votes_b", "vote_ids"),
            [
                (ids[samples[0].pk], ("B", 0, 3, JsonText("[7]"))),
                (ids[samples[2].pk], ("B", 1, 1, [8, 9])),
            ],
        )
    assert written == 2
    stored = {
        r[0]: r[1:]
        for r in CriterionLabel.objects.values_list(
            "sample_id", "preference", "votes_a", "votes_b", "vote_ids", "outcome"
        )
    }
    assert stored == {
        samples[0].pk: ("B", 0, 3, [7], "kept_unanimous"),
        samples[1].pk: ("A", 3, 0, [samples[1].pk], "kept_unanimous"),
        samples[2].pk: ("B", 1, 1, [8, 9], "kept_unanimous"),
    }


def test_update_rows_with_nothing_to_do_touches_nothing():
    assert update_rows(CriterionLabel, ("preference",), []) == 0


def test_a_failed_insert_leaves_no_rows(project):
    samples = _samples(project, 2)
    criterion = project.criteria.first()
    rows = [
        (samples[0].pk, criterion.pk, "kept_unanimous", "A", 3, 0, 0, [], NOW),
        (samples[1].pk, criterion.pk, "kept_unanimous", "A", 3, 0, 0, [], NOW),
        (samples[0].pk, criterion.pk, "kept_unanimous", "B", 3, 0, 0, [], NOW),  # a duplicate
    ]
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(CriterionLabel, FIELDS, rows)
    assert CriterionLabel.objects.count() == 0


def test_rows_inserter_writes_every_batch_in_the_callers_transaction(project):
    samples = _samples(project, 5)
    criterion = project.criteria.first()
    rows = [
        (s.pk, criterion.pk, "kept_unanimous", "AB"[i % 2], i, 0, 0, JsonText(f"[{i}]"), NOW)
        for i, s in enumerate(samples)
    ]
    with transaction.atomic():
        inserter = RowsInserter(CriterionLabel, FIELDS)
        inserter.write(rows[:2])
        # The caller's own queries go on between batches, on the same connection.
        assert Sample.objects.filter(project=project).count() == 5
        inserter.write(rows[2:3])
        inserter.write([])
        inserter.write(rows[3:])
        assert inserter.close() == 5
        assert CriterionLabel.objects.count() == 5
    stored = list(CriterionLabel.objects.order_by("sample_id").values_list(*STORED))
    assert stored == [(*row[:7], [i]) for i, row in enumerate(rows)]


def test_a_failed_batch_of_the_rows_inserter_raises_and_leaves_no_rows(project):
    samples = _samples(project, 2)
    criterion = project.criteria.first()
    row = (samples[0].pk, criterion.pk, "kept_unanimous", "A", 3, 0, 0, [], NOW)
    with pytest.raises(IntegrityError), transaction.atomic():
        inserter = RowsInserter(CriterionLabel, FIELDS)
        try:
            inserter.write([row])
            inserter.write([row])  # a duplicate: raised here or by close()
        finally:
            inserter.close()
    assert CriterionLabel.objects.count() == 0


def test_read_int_columns_returns_aligned_int64_arrays(project):
    samples = _samples(project, 4)
    got = read_int_columns(
        Sample.objects.filter(project=project).order_by("pk"), ["id", "project_id"]
    )
    assert got["id"].dtype == np.int64
    assert got["id"].tolist() == [s.pk for s in samples]
    assert got["project_id"].tolist() == [project.pk] * 4
    empty = read_int_columns(Sample.objects.none(), ["id"])
    assert empty["id"].tolist() == [] and empty["id"].dtype == np.int64


def test_read_int_columns_reads_annotations_and_large_values(project):
    from django.db.models import F, Value
    from django.db.models.fields import BigIntegerField

    _samples(project, 2)
    big = 2**62 + 7
    got = read_int_columns(
        Sample.objects.filter(project=project)
        .annotate(big=Value(big, output_field=BigIntegerField()), twice=F("id") * 2)
        .order_by("pk"),
        ["big", "twice", "id"],
    )
    assert got["big"].tolist() == [big, big]
    assert got["twice"].tolist() == [2 * i for i in got["id"].tolist()]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL temporary table")
def test_temp_int_table_takes_columns_and_arrays_of_any_length():
    from core.db import temp_int_table

    values = np.array([10, 11, 12, 20, 2**40], np.int64)
    starts, stops = np.array([0, 3, 3, 4]), np.array([3, 4, 3, 5])
    with transaction.atomic():
        temp_int_table(
            "t_ints",
            {"a": np.array([1, 2, 3, 4]), "b": np.array([-5, 6, 7, -(2**40)])},
            {"ids": (values, starts, stops)},
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT a, b, ids, to_jsonb(ids)::text FROM t_ints ORDER BY a")
            rows = cursor.fetchall()
    assert rows == [
        (1, -5, [10, 11, 12], "[10, 11, 12]"),
        (2, 6, [20], "[20]"),
        (3, 7, [], "[]"),
        (4, -(2**40), [2**40], f"[{2**40}]"),
    ]
