"""The judge statistics stored on scorecards reach the leaderboard's CSV and LaTeX exports:
the alternative annotator test, the judge's consistency beside the annotators', and the
prediction-powered estimates (pure cells and through the download)."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from judging.board_export import (
    BoardColumn,
    BoardRow,
    board_latex,
    replaces_count,
    statistics_cells,
)
from judging.services.scoring import judge_run_upload
from tests.judging.alt_test_data import random_verdicts, version_with_votes, voted_rows
from tests.judging.web_data import predictions_file

FIGURES = {
    "alt_test": {
        "criteria": ["logic", "clarity"],
        "passed": ["logic"],
        "failed": [],
        "refused": None,
        "per_criterion": {
            "logic": {"winning_rate": 1.0, "passed": True},
            "clarity": {"refused": "needs votes of at least 3 annotators"},
        },
    },
    "reliability": {
        "criteria": ["logic"],
        "per_criterion": {
            "logic": {
                "position_consistency": 83.333,
                "self_agreement": 0.61234,
                "annotator_kappa": 0.5,
            },
        },
    },
    "ppi": {
        "per_criterion": {"logic": {"estimate": 71.2, "ci": [65.1, 77.3], "effective_n": 140.2}},
        "pacc": {"estimate": 40.0, "ci": [30.0, 50.0], "effective_n": 90.0},
    },
}


def test_statistics_cells_and_the_alt_test_count():
    assert statistics_cells(FIGURES) == {
        "logic Alt-Test": "passed",
        "logic Alt-Test winning rate": "1.0000",
        "clarity Alt-Test": "refused",
        "clarity Alt-Test winning rate": "",
        "logic position consistency": "83.33",
        "logic judge kappa across runs": "0.6123",
        "logic annotators kappa": "0.5000",
        "logic PPI": "71.20",
        "logic PPI CI low": "65.10",
        "logic PPI CI high": "77.30",
        "logic PPI effective labels": "140.2",
        "PAcc PPI": "40.00",
        "PAcc PPI CI low": "30.00",
        "PAcc PPI CI high": "50.00",
        "PAcc PPI effective labels": "90.0",
    }
    assert statistics_cells({}) == {}
    assert replaces_count(FIGURES) == (1, 1)
    assert replaces_count({"alt_test": {"refused": "no votes"}}) is None


def test_latex_adds_the_alt_test_column():
    rows = [
        BoardRow("a", [50.0], [None], 1, "", "", 0, replaces=(2, 3)),
        BoardRow("b", [40.0], [None], 1, "", "", 0),
    ]
    tex = board_latex([BoardColumn("PAcc", "metrics")], rows, caption="c")
    assert "Replaces an annotator" in tex
    assert "a & \\textbf{50.00} & 2/3 \\\\" in tex and "b & 40.00 & -- \\\\" in tex


@pytest.mark.django_db
def test_the_downloads_carry_the_statistics(client, lead, project):
    rows = voted_rows(40)
    version = version_with_votes(project, rows)
    majority = {r["question_id"]: r["preference"] for r in rows}
    for judge, verdicts in (("majority", majority), ("coin", random_verdicts(rows))):
        lines = [{"question_id": q, "prediction": v} for q, v in verdicts.items()]
        judge_run_upload(version=version, judge=judge, file=predictions_file(lines), by=lead)
    client.force_login(lead)
    url = reverse("leaderboard-export", args=[project.slug, 1, "csv"]) + "?split=open_ended"
    table = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
    by_judge = {row["judge"]: row for row in table}
    assert by_judge["majority"]["completeness Alt-Test"] == "passed"
    assert by_judge["majority"]["completeness Alt-Test winning rate"] == "1.0000"
    assert by_judge["coin"]["clarity Alt-Test"] == "failed"
    assert "clarity annotators kappa" in table[0]
    tex_url = reverse("leaderboard-export", args=[project.slug, 1, "tex"]) + "?split=open_ended"
    tex = client.get(tex_url).content.decode()
    assert "Replaces an annotator" in tex and "2/2" in tex and "0/2" in tex
