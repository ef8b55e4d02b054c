"""A label's sample and criterion are checked per statement by triggers (PostgreSQL).

The guarantees of the foreign keys they replace: no label points to a missing sample or
criterion, the ORM's cascade still deletes labels with their sample or criterion, a raw delete
of a sample or criterion that labels point to fails, and a sample being labelled cannot be
deleted under the writing transaction.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from aggregation.models import CriterionLabel
from annotation.models import Criterion, Sample
from tests.conftest import make_sample

from .labels import label
from .votes import criteria_of

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="triggers are PostgreSQL only"
)


@contextlib.contextmanager
def refused(match: str) -> Iterator[None]:
    """The statement inside fails with an integrity error matching ``match``, rolled back."""
    with pytest.raises(IntegrityError, match=match), transaction.atomic():
        yield


def _insert(sample_id: int, criterion_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {CriterionLabel._meta.db_table} (sample_id, criterion_id, outcome, "
            "preference, votes_a, votes_b, votes_tie, vote_ids, provenance, computed_at) "
            "VALUES (%s, %s, 'dropped_split', '', 1, 1, 1, '[]', 'human', now())",
            [sample_id, criterion_id],
        )


@pytest.mark.django_db
def test_a_label_of_a_missing_sample_or_criterion_is_refused(project):
    sample = make_sample(project, "s1")
    criterion = criteria_of(project)[0]
    missing = Sample.objects.order_by("-id").first().pk + 1000
    with refused(f"sample {missing}, which does not exist"):
        _insert(missing, criterion.pk)
    with refused("criterion 987654, which does not exist"):
        _insert(sample.pk, 987654)
    with refused("does not exist"):
        CriterionLabel.objects.bulk_create(
            [
                CriterionLabel(
                    sample=sample,
                    criterion=criterion,
                    outcome="dropped_split",
                    computed_at=timezone.now(),
                ),
                CriterionLabel(
                    sample_id=missing,
                    criterion=criterion,
                    outcome="dropped_split",
                    computed_at=timezone.now(),
                ),
            ]
        )
    assert not CriterionLabel.objects.exists()  # the whole statement failed
    kept = label(sample, criterion)
    with refused("does not exist"):
        CriterionLabel.objects.filter(pk=kept.pk).update(sample_id=missing)
    kept.refresh_from_db()
    assert kept.sample_id == sample.pk


@pytest.mark.django_db
def test_raw_deletes_under_labels_fail_and_the_orm_cascades(project):
    first, second = make_sample(project, "s1"), make_sample(project, "s2")
    criteria = criteria_of(project)
    label(first, criteria[0])
    label(second, criteria[1])
    with refused(f"sample {first.pk} still has labels"), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Sample._meta.db_table} WHERE id = %s", [first.pk])
    with refused(f"criterion {criteria[1].pk} still has labels"), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Criterion._meta.db_table} WHERE id = %s", [criteria[1].pk])
    assert CriterionLabel.objects.count() == 2
    first.delete()
    assert list(CriterionLabel.objects.values_list("sample_id", flat=True)) == [second.pk]
    Criterion.objects.filter(pk=criteria[1].pk).delete()
    assert not CriterionLabel.objects.exists()
    # A sample without labels deletes as before.
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Sample._meta.db_table} WHERE id = %s", [second.pk])
    assert not Sample.objects.filter(pk=second.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_a_sample_being_labelled_cannot_be_deleted_under_the_writer(project):
    """The writer locks the sample; a delete waits for its commit, then fails."""
    sample = make_sample(project, "s1")
    criterion = criteria_of(project)[0]
    params = connection.get_connection_params()
    other = psycopg.connect(
        **{k: v for k, v in params.items() if k in {"dbname", "user", "password", "host", "port"}},
        autocommit=True,
    )
    outcome: dict[str, object] = {}

    def delete_sample() -> None:
        started = time.perf_counter()
        try:
            other.execute(f"DELETE FROM {Sample._meta.db_table} WHERE id = %s", [sample.pk])
            outcome["error"] = None
        except psycopg.errors.ForeignKeyViolation as error:
            outcome["error"] = str(error)
        outcome["waited"] = time.perf_counter() - started

    with other:
        with transaction.atomic():
            _insert(sample.pk, criterion.pk)
            deleter = threading.Thread(target=delete_sample)
            deleter.start()
            time.sleep(0.5)
            assert deleter.is_alive()  # waiting on the writer's lock
        deleter.join(10)
    assert outcome["waited"] >= 0.4
    assert outcome["error"] and f"sample {sample.pk} still has labels" in outcome["error"]
    assert Sample.objects.filter(pk=sample.pk).exists()
    assert CriterionLabel.objects.filter(sample=sample).count() == 1
