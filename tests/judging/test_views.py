"""Leaderboard, scorecard and upload pages: who may see them, what they show, sorting, uploads."""

import re

import pytest
from django.urls import reverse

from annotation.services.projects import member_add
from core.models import Job
from judging.models import JudgeRun, Prediction, Scorecard
from judging.selectors.leaderboard import leaderboard_rows
from judging.services.scoring import judge_run_upload
from tests.judging.web_data import (
    HAND_PREDICTIONS,
    HAND_ROWS,
    A,
    make_version,
    prediction_lines,
    predictions_file,
    predictions_upload,
)

pytestmark = pytest.mark.django_db

PERFECT = {f"{p}__{c}": pref for p, _, c, pref in HAND_ROWS}
ALL_A = dict.fromkeys(PERFECT, A)


@pytest.fixture
def judges(version, lead):
    """Three judges: perfect, the hand-worked one and one that always answers A."""
    for judge, predictions in (
        ("perfect", PERFECT),
        ("judge-x", HAND_PREDICTIONS),
        ("agnostic", ALL_A),
    ):
        judge_run_upload(
            version=version,
            judge=judge,
            file=predictions_file(prediction_lines(predictions)),
            by=lead,
            template_hash="abc123def456",
        )


@pytest.fixture
def member(project, annotator):
    member_add(project=project, user=annotator)
    return annotator


def board_url(version, **query):
    url = reverse("leaderboard", args=[version.project.slug, version.number])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def judge_order(html: str) -> list[str]:
    return re.findall(r'<th scope="row" class="judge-col"><a href="[^"]+">([^<]+)</a>', html)


# --- who may see what ---------------------------------------------------------------------


def test_anonymous_users_are_sent_to_login(client, version, judges):
    for url in (
        board_url(version),
        reverse("scorecard", args=[version.project.slug, 1, "judge-x"]),
        reverse("predictions-upload", args=[version.project.slug, 1]),
    ):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_outsiders_get_403_and_members_see_the_board(client, outsider, member, version, judges):
    client.force_login(outsider)
    assert client.get(board_url(version)).status_code == 403
    client.force_login(member)
    response = client.get(board_url(version))
    assert response.status_code == 200
    assert judge_order(response.content.decode()) == ["perfect", "agnostic", "judge-x"]
    assert b"Upload predictions" not in response.content


def test_annotators_cannot_upload(client, member, version):
    client.force_login(member)
    url = reverse("predictions-upload", args=[version.project.slug, 1])
    assert client.get(url).status_code == 403
    response = client.post(url, {"judge": "x", "file": predictions_upload()})
    assert response.status_code == 403
    assert not JudgeRun.objects.exists() and not Job.objects.exists()


def test_a_version_that_is_not_ready_has_no_leaderboard(client, lead, project):
    make_version(project, number=4, status="building")
    client.force_login(lead)
    assert client.get(reverse("leaderboard", args=[project.slug, 4])).status_code == 404


# --- the leaderboard ----------------------------------------------------------------------


def test_leaderboard_shows_figures_cis_and_run_details(client, lead, version, judges):
    client.force_login(lead)
    html = client.get(board_url(version)).content.decode()
    # The paper's column order, then each criterion of the split by its short name.
    headers = re.findall(r'<a class="sort[^"]*" href="[^"]+"[^>]*>([^<]+)<', html)
    assert headers[:9] == [
        "Judge",
        "PAcc",
        "CMR",
        "TOS",
        "Avg",
        "Completeness",
        "Visual Grounding",
        "Factuality",
        "Voted",
    ]
    row = html[html.index(">judge-x</a>") :]
    row = row[: row.index("</tr>")]
    values = re.findall(r'<span class="v">([^<]+)</span>', row)
    assert values == ["33.33", "66.67", "100.00", "66.67", "100.00", "50.00", "50.00"]
    assert re.search(r'title="95% CI [\d.]+–[\d.]+ · 1 / 3 prompts"', row)
    assert "abc123de…" in row and 'title="abc123def456"' in row
    assert "open-ended split" in html


def test_split_tabs_switch_the_table(client, lead, version, judges):
    client.force_login(lead)
    html = client.get(board_url(version, split="reasoning")).content.decode()
    assert "Logical Coherence" in html and "Completeness" not in html
    row = html[html.index(">judge-x</a>") :]
    values = re.findall(r'<span class="v">([^<]+)</span>', row[: row.index("</tr>")])
    # PAcc 0, CMR 0, TOS 0, Avg 50; then grounding (wrong) and logic (right), paper order.
    assert values == ["0.00", "0.00", "0.00", "50.00", "0.00", "100.00"]


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        (None, ["perfect", "agnostic", "judge-x"]),  # PAcc best first; ties by name
        ("tos", ["agnostic", "judge-x", "perfect"]),
        ("-avg", ["perfect", "agnostic", "judge-x"]),  # 100, 72.22, 66.67
        ("judge", ["agnostic", "judge-x", "perfect"]),
        ("-judge", ["perfect", "judge-x", "agnostic"]),
        ("c:hallucination", ["judge-x", "agnostic", "perfect"]),  # 50, 100, 100
        ("bogus", ["perfect", "agnostic", "judge-x"]),
    ],
)
def test_sorting_by_any_header_works_without_javascript(
    client, lead, version, judges, sort, expected
):
    client.force_login(lead)
    query = {"sort": sort} if sort else {}
    html = client.get(board_url(version, **query)).content.decode()
    assert judge_order(html) == expected


def test_header_links_toggle_the_direction_and_keep_the_split(client, lead, version, judges):
    client.force_login(lead)
    html = client.get(board_url(version, split="open_ended", sort="-tos")).content.decode()
    assert (
        'href="/projects/test-project/versions/1/leaderboard/?split=open_ended&amp;sort=tos"'
        in html
    )
    assert 'aria-sort="descending"' in html
    # Another figure's first click sorts it best first.
    assert "split=open_ended&amp;sort=-cmr" in html


def test_an_htmx_sort_returns_only_the_board(client, lead, version, judges):
    client.force_login(lead)
    response = client.get(board_url(version, sort="judge"), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="board"')
    assert "<html" not in html
    assert judge_order(html) == ["agnostic", "judge-x", "perfect"]


def test_undefined_figures_sort_last_both_ways(version, judges):
    Scorecard.objects.create(version=version, judge="broken", split="open_ended", figures={})
    for sort in ("-pacc", "pacc"):
        rows, _, _ = leaderboard_rows(version=version, split="open_ended", sort=sort)
        assert rows[-1].judge == "broken"
        assert rows[-1].cells[0].value is None


def test_leaderboard_queries_do_not_grow_with_judges(
    client, lead, version, judges, django_assert_max_num_queries
):
    client.force_login(lead)
    # 13: the lead's page also lists the judge configs of the judge runner's form (one query);
    # 3 more while the paired tests against the judge above are not cached: the version's rows,
    # the judges' runs and their predictions, whatever the number of judges.
    with django_assert_max_num_queries(16):
        assert client.get(board_url(version)).status_code == 200
    for i in range(5):
        judge_run_upload(version=version, judge=f"extra-{i}", file=predictions_file(), by=lead)
    with django_assert_max_num_queries(16):
        html = client.get(board_url(version)).content.decode()
    assert len(judge_order(html)) == 8


def test_empty_split_invites_an_upload(client, lead, version):
    client.force_login(lead)
    html = client.get(board_url(version)).content.decode()
    assert "No judge has been scored on this split yet." in html


# --- the scorecard page -------------------------------------------------------------------


def test_scorecard_shows_figures_bars_and_diagnostics(client, lead, version, judges):
    client.force_login(lead)
    url = reverse("scorecard", args=[version.project.slug, 1, "judge-x"])
    response = client.get(url + "?split=open_ended")
    html = response.content.decode()
    assert response.status_code == 200
    for figure in ("33.33", "66.67", "100.00", "71.43"):
        assert f'<div class="value">{figure}</div>' in html
    assert "1 / 3 prompts" in html and "2 / 3 conflicting pairs" in html
    assert "2 / 2 conflict prompts" in html and "5 / 7 rows" in html
    # Server-side SVG bars, one per criterion, with their numbers in a table as well.
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert svg.count('class="bar"') == 3
    assert "100.00%" in svg and "50.00%" in svg
    assert '<td class="num">100.00</td>' in html
    # Diagnostics: criterion-agnostic share, A predictions against the human share, invalid.
    assert "<strong>0.00%</strong>" in html
    assert "<strong>42.86%</strong>" in html and "71.43% A preferences" in html
    assert "0 of 3 prompts" in html


def test_scorecard_of_a_judge_with_a_slash_and_na_figures(client, lead, project):
    version = make_version(
        project, [("p1", "open_ended", "completeness", A), ("p1", "open_ended", "clarity", A)]
    )
    judge_run_upload(
        version=version,
        judge="org/model-7b",
        file=predictions_file(
            [
                {"question_id": "p1__completeness", "prediction": A},
                {"question_id": "p1__clarity", "output": "I cannot decide."},
            ]
        ),
        by=lead,
    )
    client.force_login(lead)
    url = reverse("scorecard", args=[project.slug, 1, "org/model-7b"])
    assert url.endswith("/leaderboard/org/model-7b/")
    html = client.get(url).content.decode()
    assert "<h1>org/model-7b</h1>" in html
    assert html.count('<span class="na">n/a</span></div>') == 2  # CMR and TOS: no conflict
    assert "1 unparsable output on this split" in html and "I cannot decide." in html
    assert client.get(url + "?split=reasoning").status_code == 200  # falls back to open-ended
    missing = reverse("scorecard", args=[project.slug, 1, "nobody"])
    assert client.get(missing).status_code == 404


# --- uploading ----------------------------------------------------------------------------


def upload_url(version):
    return reverse("predictions-upload", args=[version.project.slug, version.number])


def test_upload_runs_a_job_and_shows_its_card_and_scorecard_links(
    client, lead, version, settings, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            upload_url(version),
            {"judge": "judge-x", "template_hash": "t1", "file": predictions_upload()},
        )
    job = Job.objects.get(kind=Job.Kind.SCORE_JUDGE)
    assert response.status_code == 302 and response.url == f"{upload_url(version)}?job={job.pk}"
    assert job.status == Job.Status.SUCCEEDED and job.created_by == lead
    assert job.result["runs"] == [1] and job.result["splits"] == ["open_ended", "reasoning"]
    card = Scorecard.objects.get(judge="judge-x", split="open_ended")
    assert (card.pacc, card.cmr, card.tos, card.avg) == (33.33, 66.67, 100.0, 66.67)
    assert card.template_hash == "t1"

    html = client.get(response.url).content.decode()
    assert f'id="job-{job.pk}"' in html and "Stored run 1 of judge-x: 9 predictions." in html
    scorecard_url = reverse("scorecard", args=[version.project.slug, 1, "judge-x"])
    assert f'href="{scorecard_url}?split=reasoning"' in html
    # The uploaded file is not kept once stored.
    assert not list((settings.MEDIA_ROOT / "judging" / "uploads").glob("*/*"))


def test_a_refused_file_lists_every_bad_line_and_stores_nothing(
    client, lead, version, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    good = prediction_lines()
    lines = [
        *good[:3],
        {"question_id": "nope__logic", "prediction": A},  # line 4
        {"question_id": good[3]["question_id"]},  # line 5: no prediction
        *good[4:],
        {"question_id": good[0]["question_id"], "prediction": A, "run": "x"},  # last line
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            upload_url(version),
            {
                "judge": "judge-x",
                "template_hash": "abc123",
                "lenient": "",
                "file": predictions_upload(lines),
            },
        )
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED
    last = len(lines)
    assert job.result == {
        "errors": [
            {"line": 4, "field": "question_id", "message": "unknown question id 'nope__logic'"},
            {
                "line": 5,
                "field": "prediction",
                "message": "a line needs a prediction, an output or a critic field",
            },
            {"line": last, "field": "run", "message": "must be a whole number, got 'x'"},
        ],
        "more": 0,
    }
    assert not JudgeRun.objects.exists() and not Prediction.objects.exists()
    html = client.get(response.url).content.decode()
    assert "predictions.jsonl was refused: 3 errors. Nothing was stored." in html
    rows = re.findall(r"<tr><td class=\"num\">(\d+)</td><td><code>(\w+)</code></td>", html)
    assert rows == [("4", "question_id"), ("5", "prediction"), (str(last), "run")]
    assert "upload-job has-errors" in html
    # The form keeps what was sent (the file aside), ready for the corrected file.
    assert 'name="judge" value="judge-x"' in html
    assert 'name="template_hash" value="abc123"' in html


def test_one_bad_line_reads_as_one_error(client, lead, version, django_capture_on_commit_callbacks):
    client.force_login(lead)
    lines = [*prediction_lines(), {"question_id": "nope__logic", "prediction": A}]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            upload_url(version), {"judge": "judge-x", "file": predictions_upload(lines)}
        )
    html = client.get(response.url).content.decode()
    assert "predictions.jsonl was refused: 1 error. Nothing was stored." in html
    assert (
        Job.objects.get().error == "line 10, field 'question_id': unknown question id 'nope__logic'"
    )


def test_a_taken_run_index_is_a_form_error_before_any_job(client, lead, version, judges):
    client.force_login(lead)
    response = client.post(
        upload_url(version), {"judge": "judge-x", "run_index": 1, "file": predictions_upload()}
    )
    assert response.status_code == 200
    assert "judge-x already has run 1 on version 1" in response.content.decode()
    assert not Job.objects.exists()


def test_a_wrong_file_type_is_refused_by_the_form(client, lead, version):
    client.force_login(lead)
    response = client.post(
        upload_url(version), {"judge": "j", "file": predictions_upload(name="preds.xlsx")}
    )
    assert "Expected a .jsonl or .csv file" in response.content.decode()
    assert not Job.objects.exists()


def test_an_htmx_upload_swaps_in_the_panel_with_the_job_card(
    client, lead, version, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            upload_url(version),
            {
                "judge": "judge-x",
                "split": "open_ended",
                "lenient": "on",
                "file": predictions_upload(),
            },
            headers={"HX-Request": "true"},
        )
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="upload-panel">')
    job = Job.objects.get()
    assert f'id="upload-job-{job.pk}"' in html
    # Lenient and limited to one split: the reasoning lines are skipped and counted.
    run = JudgeRun.objects.get()
    assert run.stats["skipped_other_split"] == 2
    assert list(Scorecard.objects.values_list("split", flat=True)) == ["open_ended"]

    status_url = reverse("predictions-upload-status", args=[version.project.slug, 1, job.pk])
    status = client.get(status_url, headers={"HX-Request": "true"}).content.decode()
    assert status.lstrip().startswith('<div class="upload-job')
    assert "Succeeded" in status


def test_deleting_a_run_is_for_the_lead(client, lead, member, version, judges):
    run = JudgeRun.objects.get(judge="judge-x")
    url = reverse("judge-run-delete", args=[version.project.slug, 1, run.pk])
    client.force_login(member)
    assert client.post(url).status_code == 403
    client.force_login(lead)
    response = client.post(url)
    assert response.status_code == 302 and response.url == board_url(version)
    assert not JudgeRun.objects.filter(judge="judge-x").exists()
    assert not Scorecard.objects.filter(judge="judge-x").exists()
