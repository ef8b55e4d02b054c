"""The curation filters, on their own and as an import option."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.curation import (
    CurationFeatures,
    correctness_keep,
    curate,
    ensemble_keep,
    length_keep,
    parse_filters,
)
from annotation.importing.errors import ImportRejected
from annotation.importing.service import samples_import
from annotation.models import Sample

from .import_data import sample_line, write_jsonl


def test_length_ratio_bounds_are_inclusive():
    a = np.array([70, 69, 140, 141, 10, 5])
    b = np.array([100, 100, 100, 100, 0, 5])
    assert length_keep(a, b).tolist() == [True, False, True, False, False, True]


def test_correctness_applies_to_reasoning_only():
    keep = correctness_keep(
        np.array([True, True, True, False]),
        np.array([True, False, True, True]),
        np.array([True, False, False, False]),
    )
    assert keep.tolist() == [True, True, False, True]


def test_ensemble_drops_unanimous_judges():
    prefs = np.array([["A", "A", "A"], ["A", "B", "A"], ["B", "B", "B"]])
    assert ensemble_keep(prefs).tolist() == [False, True, False]


def test_filters_run_in_order_and_count_what_each_removed():
    features = CurationFeatures(
        len_a=np.array([100, 200, 100, 100, 100]),
        len_b=np.array([100, 100, 100, 100, 100]),
        is_reasoning=np.array([False, False, True, True, False]),
        correct_a=np.array([False, False, True, True, False]),
        correct_b=np.array([False, False, False, True, False]),
        ensemble=np.array(
            [["A", "B", "A"], ["A", "A", "A"], ["A", "A", "A"], ["B", "B", "B"], ["A", "B", "B"]]
        ),
        exempt=np.array([False, False, False, False, True]),
    )
    result = curate(features, ["ensemble", "length", "correctness"])
    assert list(result.removed) == ["length", "correctness", "ensemble"]
    assert result.removed == {"length": 1, "correctness": 1, "ensemble": 1}
    assert result.keep.tolist() == [True, False, False, False, True]


def test_parse_filters_rejects_unknown_names():
    assert parse_filters("ensemble, length") == ["length", "ensemble"]
    with pytest.raises(ValueError, match="unknown filter"):
        parse_filters("length,easy")


@pytest.mark.django_db
def test_import_option_reports_removed_counts(project, tmp_path):
    ok = "x" * 100
    path = write_jsonl(
        tmp_path / "f.jsonl",
        [
            sample_line(
                "keep", response_a=ok, response_b=ok, metadata={"ensemble": ["A", "B", "A"]}
            ),
            sample_line(
                "long", response_a=ok * 2, response_b=ok, metadata={"ensemble": ["A", "B", "A"]}
            ),
            sample_line(
                "wrong",
                split="reasoning",
                response_a=ok,
                response_b=ok,
                metadata={"correct_a": True, "correct_b": False, "ensemble": ["A", "B", "B"]},
            ),
            sample_line(
                "easy", response_a=ok, response_b=ok, metadata={"ensemble": ["B", "B", "B"]}
            ),
            sample_line("seed", is_seed=True, response_a=ok * 3, response_b=ok),
        ],
    )
    report = samples_import(project=project, path=path, filters="length,correctness,ensemble")
    assert report.removed_by_filter == {"length": 1, "correctness": 1, "ensemble": 1}
    assert sorted(Sample.objects.values_list("external_id", flat=True)) == ["keep", "seed"]
    assert "filtered out: length 1, correctness 1, ensemble 1" in report.summary()


@pytest.mark.django_db
def test_filter_fields_missing_are_errors(project, tmp_path):
    path = write_jsonl(tmp_path / "f.jsonl", [sample_line("r", split="reasoning")])
    with pytest.raises(ImportRejected) as info:
        samples_import(project=project, path=path, filters="correctness,ensemble")
    assert [(p.line, p.field) for p in info.value.problems] == [
        (1, "metadata.correct_a"),
        (1, "metadata.correct_b"),
        (1, "metadata.ensemble"),
    ]
