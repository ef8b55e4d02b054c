"""The leaderboard's extras: the project's latest board, CSV / LaTeX export, two judges compared."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.services.projects import member_add, project_create
from judging.board_export import BoardColumn, BoardRow, board_csv, board_latex, latex_escape
from judging.compare import compare, split_verdicts
from judging.metrics import INVALID, MISSING
from judging.metrics import A as CA
from judging.metrics import B as CB
from judging.paired import N_BOOT
from judging.services.scoring import judge_run_upload
from judging.views.board import DIFF_PAGE_SIZE
from tests.judging.paired_data import bootstrap_p, paired_version
from tests.judging.web_data import (
    HAND_PREDICTIONS,
    HAND_ROWS,
    A,
    B,
    make_version,
    prediction_lines,
    predictions_file,
)

PERFECT = {f"{p}__{c}": pref for p, _, c, pref in HAND_ROWS}


# --- Pure parts -----------------------------------------------------------------------------


def test_latex_escape_spells_out_every_special_character():
    assert latex_escape(r"a_b & 50% #1 $x$ {y} ~z^ \ <>|") == (
        r"a\_b \& 50\% \#1 \$x\$ \{y\} \textasciitilde{}z\textasciicircum{} "
        r"\textbackslash{} \textless{}\textgreater{}\textbar{}"
    )


COLUMNS = [
    BoardColumn("PAcc", "metrics"),
    BoardColumn("Avg", "metrics"),
    BoardColumn("Logic", "criteria"),
]
ROWS = [
    BoardRow(
        "org/judge_1 & co",
        [31.44, 69.5, None],
        [[30.0, 33.0], None, None],
        3,
        "abc",
        "2026-01-02",
        1,
    ),
    BoardRow("=cmd()", [9.41, 54.39, 50.0], [None, None, [40.0, 60.0]], 1, "", "", 0),
]


def test_board_csv_has_figures_cis_and_is_safe_in_spreadsheets():
    table = list(csv.reader(io.StringIO(board_csv(COLUMNS, ROWS))))
    assert table[0] == [
        "judge", "PAcc", "PAcc CI low", "PAcc CI high", "Avg", "Avg CI low", "Avg CI high",
        "Logic", "Logic CI low", "Logic CI high",
        "runs voted", "invalid or missing", "template hash", "last run",
        "judge above", "compared on", "distinguishable from above", "Holm p vs above",
    ]  # fmt: skip
    assert table[1] == [
        "org/judge_1 & co", "31.44", "30.00", "33.00", "69.50", "", "", "", "", "",
        "3", "1", "abc", "2026-01-02", "", "", "", "",
    ]  # fmt: skip
    # A name a spreadsheet would run as a formula is quoted.
    assert table[2][0] == "'=cmd()" and table[2][7:10] == ["50.00", "40.00", "60.00"]


def test_board_latex_is_a_booktabs_table_with_escaped_names_and_best_in_bold():
    tex = board_latex(COLUMNS, ROWS, caption="Judges on the open-ended split of P_1 (100%)")
    assert "\\begin{tabular}{lrr@{\\quad}r}" in tex
    assert "\\caption{Judges on the open-ended split of P\\_1 (100\\%)}" in tex
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert " & \\multicolumn{2}{c}{Multi-criterion metrics} & " in tex
    assert "\\cmidrule(lr){2-3} \\cmidrule(lr){4-4}" in tex
    assert "Judge & PAcc & Avg & Logic \\\\" in tex
    assert "org/judge\\_1 \\& co & \\textbf{31.44} & \\textbf{69.50} & -- \\\\" in tex
    # One defined value in a column is no "best".
    assert "=cmd() & 9.41 & 54.39 & 50.00 \\\\" in tex


def test_compare_counts_rights_and_differences_per_criterion():
    criterion = np.array(["c1", "c1", "c1", "c2", "c2"])
    human = np.array([CA, CB, CA, CA, CB], dtype=np.int8)
    a = np.array([CA, CB, CB, INVALID, CB], dtype=np.int8)
    b = np.array([CA, CA, CB, MISSING, CA], dtype=np.int8)
    per, differ = compare(criterion=criterion, human=human, a=a, b=b, order=["c2", "c1"])
    assert [c.criterion for c in per] == ["c2", "c1"]
    c2, c1 = per
    assert (c1.rows, c1.a_correct, c1.b_correct, c1.differ, c1.only_a, c1.only_b) == (
        3,
        2,
        1,
        1,
        1,
        0,
    )
    # Invalid and missing are both "no valid verdict": the same, not a difference.
    assert (c2.rows, c2.a_correct, c2.b_correct, c2.differ, c2.only_a) == (2, 1, 0, 1, 1)
    assert differ.tolist() == [False, True, False, False, True]
    assert (c1.a_accuracy, c1.b_accuracy, c1.agreement) == (66.67, 33.33, 66.67)


def test_split_verdicts_vote_only_the_runs_covering_the_split():
    mask = np.array([True, True, False])
    runs = [
        np.array([CA, CA, MISSING], dtype=np.int8),
        np.array([CB, CA, MISSING], dtype=np.int8),
        np.array([CB, CB, MISSING], dtype=np.int8),
        np.array([MISSING, MISSING, CA], dtype=np.int8),  # the other split only
    ]
    assert split_verdicts(runs, mask).tolist() == [CB, CA, MISSING]
    assert split_verdicts(runs[3:], mask) is None


# --- Pages ----------------------------------------------------------------------------------


@pytest.fixture
def judges(version, lead):
    for judge, predictions in (("perfect", PERFECT), ("judge-x", HAND_PREDICTIONS)):
        judge_run_upload(
            version=version,
            judge=judge,
            file=predictions_file(prediction_lines(predictions)),
            by=lead,
            template_hash="abc123def456",
        )


def _export(client, version, fmt, **query):
    url = reverse("leaderboard-export", args=[version.project.slug, version.number, fmt])
    return client.get(url, query)


@pytest.mark.django_db
def test_the_project_navigation_opens_the_newest_leaderboard(client, lead, project):
    client.force_login(lead)
    page = client.get(f"/projects/{project.slug}/").content.decode()
    latest = reverse("leaderboard-latest", args=[project.slug])
    assert f'<a href="{latest}">Leaderboard</a>' in page
    empty = client.get(latest)
    assert empty.status_code == 200
    assert "No dataset version is ready yet." in empty.content.decode()
    make_version(project)
    second = make_version(project, number=2)
    response = client.get(latest)
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboard", args=[project.slug, second.number])


@pytest.mark.django_db
def test_members_see_the_navigation_link_too(client, annotator, project):
    member_add(project=project, user=annotator)
    client.force_login(annotator)
    page = client.get(f"/projects/{project.slug}/").content.decode()
    assert reverse("leaderboard-latest", args=[project.slug]) in page


@pytest.mark.django_db
def test_csv_export_follows_the_split_and_sort_of_the_page(client, lead, version, judges):
    client.force_login(lead)
    board = client.get(reverse("leaderboard", args=[version.project.slug, 1])).content.decode()
    assert "?split=open_ended&amp;sort=-pacc" in board  # the export links carry the sort
    response = _export(client, version, "csv", split="open_ended", sort="judge")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="{version.project.slug}-v1-open_ended-leaderboard.csv"'
    )
    table = list(csv.reader(io.StringIO(response.content.decode())))
    assert table[0][:4] == ["judge", "PAcc", "PAcc CI low", "PAcc CI high"]
    assert [r[0] for r in table[1:]] == ["judge-x", "perfect"]
    # judge-x on the open-ended split: PAcc 33.33, CMR 66.67, TOS 100, Avg 66.67 (by hand).
    figures = dict(zip(table[0], table[1], strict=True))
    assert [figures[k] for k in ("PAcc", "CMR", "TOS", "Avg")] == [
        "33.33",
        "66.67",
        "100.00",
        "66.67",
    ]
    assert figures["runs voted"] == "1" and figures["template hash"] == "abc123def456"


@pytest.mark.django_db
def test_latex_export_of_the_reasoning_split(client, lead, version, judges):
    client.force_login(lead)
    response = _export(client, version, "tex", split="reasoning")
    tex = response.content.decode()
    assert response["Content-Type"] == "application/x-tex; charset=utf-8"
    assert "\\caption{Judges on the reasoning split of Test project, dataset version 1" in tex
    rows = [line for line in tex.splitlines() if line.startswith(("perfect", "judge-x"))]
    assert rows[0].startswith("perfect & \\textbf{100.00}")
    assert rows[1].startswith("judge-x & 0.00 & ")
    assert _export(client, version, "xls").status_code == 404


@pytest.mark.django_db
def test_compare_two_judges_per_criterion_and_the_rows_that_differ(client, lead, version, judges):
    client.force_login(lead)
    url = reverse("judge-compare", args=[version.project.slug, version.number])
    html = client.get(url, {"split": "open_ended", "a": "perfect", "b": "judge-x"}).content.decode()
    cells = re.findall(
        r"<tr[^>]*>\s*<th scope=\"row\"><a [^>]+>([^<]+)</a></th>(.*?)</tr>", html, re.S
    )
    figures = {name: re.findall(r'<td class="num[^"]*">([^<]+)', rest) for name, rest in cells}
    # completeness 3 rows both right; visual-grounding and hallucination: 1 of 2 differs.
    assert figures["Completeness"] == ["3", "100.00", "100.00", "100.00", "0", "0", "0"]
    assert figures["Visual Grounding"] == ["2", "100.00", "50.00", "50.00", "1", "1", "0"]
    assert figures["Factuality"] == ["2", "100.00", "50.00", "50.00", "1", "1", "0"]
    assert "2 rows" in html
    rows = re.findall(r'<td class="ex-mono">([^<]+)</td>', html)
    assert rows == ["p2__visual-grounding", "p1__hallucination"]
    # One criterion's rows only.
    html = client.get(
        url, {"split": "open_ended", "a": "perfect", "b": "judge-x", "criterion": "hallucination"}
    ).content.decode()
    assert re.findall(r'<td class="ex-mono">([^<]+)</td>', html) == ["p1__hallucination"]
    assert "1 row" in html


@pytest.mark.django_db
def test_the_rows_that_differ_are_paginated(client, lead, project):
    n = DIFF_PAGE_SIZE + 5
    version = make_version(project, [(f"p{i}", "reasoning", "logic", A) for i in range(n)])
    for judge, verdict in (("always-a", A), ("always-b", B)):
        judge_run_upload(
            version=version,
            judge=judge,
            file=predictions_file(
                [{"question_id": f"p{i}__logic", "prediction": verdict} for i in range(n)]
            ),
            by=lead,
        )
    client.force_login(lead)
    url = reverse("judge-compare", args=[project.slug, version.number])
    first = client.get(url, {"a": "always-a", "b": "always-b"}).content.decode()
    assert f"{n} rows, page 1 of 2" in first
    assert len(re.findall(r'<td class="ex-mono">', first)) == DIFF_PAGE_SIZE
    assert 'rel="next"' in first
    second = client.get(url, {"a": "always-a", "b": "always-b", "page": 2}).content.decode()
    assert len(re.findall(r'<td class="ex-mono">', second)) == 5
    assert 'rel="prev"' in second


@pytest.mark.django_db
def test_compare_of_a_version_with_votes_is_the_leads(client, annotator, lead, project):
    member_add(project=project, user=annotator)
    version = make_version(project, status="building")
    # Set while building: a ready version's options never change.
    type(version).objects.filter(pk=version.pk).update(include_votes=True)
    type(version).objects.filter(pk=version.pk).update(status="ready")
    url = reverse("judge-compare", args=[project.slug, version.number])
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    client.force_login(lead)
    assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_compare_queries_do_not_grow_with_the_rows(client, lead):
    def queries(n: int) -> int:
        project = project_create(name=f"P{n}", slug=f"p{n}")
        version = make_version(project, [(f"p{i}", "reasoning", "logic", A) for i in range(n)])
        for judge, verdict in (("always-a", A), ("always-b", B)):
            lines = [{"question_id": f"p{i}__logic", "prediction": verdict} for i in range(n)]
            judge_run_upload(version=version, judge=judge, file=predictions_file(lines), by=lead)
        client.force_login(lead)
        url = reverse("judge-compare", args=[project.slug, version.number])
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    assert queries(3) == queries(DIFF_PAGE_SIZE * 3)


# --- Paired tests ---------------------------------------------------------------------------


def _paired_rows(html: str, caption: str) -> dict[str, list[str]]:
    """The cells of one paired-tests table, by figure key."""
    table = html.split(caption, 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr data-figure="([^"]+)">(.*?)</tr>', table, re.S)
    return {
        key: [
            re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", rest, re.S)
        ]
        for key, rest in rows
    }


@pytest.mark.django_db
def test_compare_page_shows_the_paired_tests_one_criterion_apart(client, lead, project):
    version = paired_version(project, lead, judges=("strong", "weak"))
    client.force_login(lead)
    url = reverse("judge-compare", args=[project.slug, version.number])
    html = client.get(url, {"split": "reasoning", "a": "strong", "b": "weak"}).content.decode()
    crit = _paired_rows(html, "Exact McNemar test per criterion")
    assert crit["logic"] == ["100.00", "0.00", "12", "0", "0.0005", "0.0039", "● A better"]
    assert crit["grounding"] == [
        "100.00",
        "91.67",
        "1",
        "0",
        "1.0000",
        "1.0000",
        "not distinguishable",
    ]
    assert crit["hallucination"] == [
        "100.00",
        "100.00",
        "0",
        "0",
        "1.0000",
        "1.0000",
        "not distinguishable",
    ]
    head = _paired_rows(html, "Headline differences")
    holm_boot = f"{7 * bootstrap_p(N_BOOT):.4f}"
    assert head["pacc"] == [
        "100.00",
        "0.00",
        "100.00",
        "100.00 to 100.00",
        f"{bootstrap_p(N_BOOT):.4f}",
        holm_boot,
        "● A better",
    ]
    assert head["cmr"][:4] == ["100.00", "45.83", "54.17", "50.00 to 62.50"]
    assert head["cmr"][5:] == [holm_boot, "● A better"]
    assert head["tos"] == [
        "100.00",
        "100.00",
        "0.00",
        "0.00 to 0.00",
        "1.0000",
        "1.0000",
        "not distinguishable",
    ]
    assert head["avg"][:3] == ["100.00", "63.89", "36.11"]
    assert head["overall"][:3] == ["100.00", "63.89", "36.11"]
    assert (
        "Holm&#x27;s correction over all 8 figures" in html
        or "Holm's correction over all 8 figures" in html
    )


def _distinctions(html: str) -> dict[str, str]:
    """Per judge of the board, the text of its distinction mark ("" without one)."""
    heads = re.findall(
        r'<th scope="row" class="judge-col"><a [^>]*>([^<]+)</a>(.*?)</th>', html, re.S
    )
    out = {}
    for judge, rest in heads:
        mark = re.search(r'<span class="distinction[^"]*"[^>]*>(.*)</span>', rest, re.S)
        out[judge] = re.sub(r"<[^>]+>", "", mark.group(1)).strip() if mark else ""
    return out


@pytest.mark.django_db
def test_leaderboard_says_which_judge_is_distinguishable_from_the_one_above(client, lead, project):
    cache.clear()
    version = paired_version(project, lead)
    client.force_login(lead)
    url = reverse("leaderboard", args=[project.slug, version.number])
    html = client.get(url, {"split": "reasoning"}).content.decode()
    assert _distinctions(html) == {
        "strong": "",
        "weak": "▲ distinguishable from strong",
        "weak-twin": "≈ not distinguishable from weak",
    }
    assert f"Holm p {7 * bootstrap_p(N_BOOT):.4f}" in html  # PAcc, the sort column
    # On TOS (100 for all three) nobody is distinguishable; on logic weak is.
    html = client.get(url, {"split": "reasoning", "sort": "-tos"}).content.decode()
    assert _distinctions(html)["weak"] == "≈ not distinguishable from strong"
    html = client.get(url, {"split": "reasoning", "sort": "-c:logic"}).content.decode()
    assert _distinctions(html)["weak"] == "▲ distinguishable from strong"
    assert "Holm p 0.0039" in html
    # A sort by name tests nothing.
    html = client.get(url, {"split": "reasoning", "sort": "judge"}).content.decode()
    assert set(_distinctions(html).values()) == {""}


@pytest.mark.django_db
def test_leaderboard_queries_do_not_grow_with_the_judges_and_the_tests_are_cached(client, lead):
    def queries(judges: tuple[str, ...]) -> tuple[int, int]:
        cache.clear()
        project = project_create(name=f"P{len(judges)}", slug=f"p{len(judges)}")
        version = paired_version(project, lead, judges=judges)
        client.force_login(lead)
        url = reverse("leaderboard", args=[project.slug, version.number])
        counts = []
        for _ in range(2):
            with CaptureQueriesContext(connection) as captured:
                assert "distinguishable from" in client.get(url).content.decode()
            counts.append(len(captured))
        return counts[0], counts[1]

    first2, cached2 = queries(("strong", "weak"))
    first3, cached3 = queries(("strong", "weak", "weak-twin"))
    assert first2 == first3
    assert cached2 == cached3 == first2 - 3  # no rows, runs or predictions read


def test_board_exports_carry_the_paired_test_against_the_judge_above():
    rows = [ROWS[0], BoardRow("=cmd()", [9.41, 54.39, 50.0], [None, None, None], 1, "", "", 0,
                              above="org/judge_1 & co", compared_on="PAcc", distinct=False,
                              p_holm=0.25)]  # fmt: skip
    table = list(csv.reader(io.StringIO(board_csv(COLUMNS, rows))))
    assert table[1][-4:] == ["", "", "", ""]
    assert table[2][-4:] == ["org/judge_1 & co", "PAcc", "no", "0.25"]
    tex = board_latex(COLUMNS, rows, caption="c")
    assert "\\begin{tabular}{lrr@{\\quad}rl}" in tex
    assert "Judge & PAcc & Avg & Logic & Distinct from above \\\\" in tex
    assert "org/judge\\_1 \\& co & \\textbf{31.44} & \\textbf{69.50} & -- & -- \\\\" in tex
    assert "=cmd() & 9.41 & 54.39 & 50.00 & no (0.2500) \\\\" in tex


@pytest.mark.django_db
def test_exports_say_whether_each_judge_is_distinguishable_from_the_one_above(
    client, lead, project
):
    cache.clear()
    version = paired_version(project, lead)
    client.force_login(lead)
    response = _export(client, version, "csv", split="reasoning")
    table = list(csv.reader(io.StringIO(response.content.decode())))
    paired = {r[0]: dict(zip(table[0], r, strict=True)) for r in table[1:]}
    tail = ["judge above", "compared on", "distinguishable from above", "Holm p vs above"]
    assert [paired["strong"][k] for k in tail] == ["", "", "", ""]
    assert [paired["weak"][k] for k in tail] == [
        "strong", "PAcc", "yes", f"{7 * bootstrap_p(N_BOOT):.6g}",
    ]  # fmt: skip
    assert [paired["weak-twin"][k] for k in tail] == ["weak", "PAcc", "no", "1"]
    response = _export(client, version, "tex", split="reasoning", sort="-c:logic")
    tex = response.content.decode()
    assert "Distinct from above" in tex and "Holm-adjusted p in parentheses" in tex
    lines = {line.split(" & ")[0]: line for line in tex.splitlines() if " & " in line}
    assert lines["weak"].endswith(" & yes (0.0039) \\\\")
    assert lines["weak-twin"].endswith(" & no (1.0000) \\\\")
    assert lines["strong"].endswith(" & -- \\\\")
