"""Official judge outputs (raw text in ``critic``) and a chosen prompt template: web and API."""

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from core.models import Job
from judging.models import JudgeRun, Prediction, Scorecard
from tests.judging.web_data import HAND_EXPECTED_OPEN, HAND_PREDICTIONS, A, jsonl, make_token

pytestmark = pytest.mark.django_db

TEMPLATE = (
    "Criterion $criterion_key ($criterion_name): $criterion_description\n"
    "$question\n[1] $response_1\n[2] $response_2\nEnd with: Response N is better.\n"
)
TEMPLATE_SHA = hashlib.sha256(TEMPLATE.encode()).hexdigest()


def critic_lines(predictions=HAND_PREDICTIONS):
    """The official judge output layout: question_id + the judge's raw text."""
    lines = []
    for i, (q, p) in enumerate(predictions.items()):
        number = 1 if p == A else 2
        # The verdict in bold and upper case on alternate lines, a trailing blank line on some.
        verdict = f"**Response {number}** is better." if i % 2 else f"RESPONSE {number} IS BETTER"
        text = f"Response 2 is better at first sight.\nLooking closer.\n\n{verdict}\n" + "\n" * i
        lines.append({"question_id": q, "critic": text})
    return lines


def test_web_upload_of_critic_outputs_with_a_template_file(
    client, lead, version, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    url = reverse("predictions-upload", args=[version.project.slug, version.number])
    lines = critic_lines()
    lines[0] = {"question_id": lines[0]["question_id"], "critic": "I cannot decide."}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {
                "judge": "official-judge",
                "file": SimpleUploadedFile("critic.jsonl", jsonl(lines)),
                "template": SimpleUploadedFile("official.txt", TEMPLATE.encode()),
            },
        )
    assert response.status_code == 302
    job = Job.objects.get(kind=Job.Kind.SCORE_JUDGE)
    assert job.status == Job.Status.SUCCEEDED, job.message
    run = JudgeRun.objects.get()
    assert run.template_hash == TEMPLATE_SHA
    stored = dict(Prediction.objects.values_list("question_id", "prediction"))
    first = lines[0]["question_id"]
    assert stored == {**HAND_PREDICTIONS, first: "invalid"}
    assert Prediction.objects.get(question_id=first).raw_output == "I cannot decide."
    assert run.stats["unparsable"] == 1
    assert run.stats["unparsable_rows"][0]["question_id"] == first
    card = Scorecard.objects.get(judge="official-judge", split="reasoning")
    assert card.template_hash == TEMPLATE_SHA
    board = client.get(reverse("leaderboard", args=[version.project.slug, 1]) + "?split=reasoning")
    assert f'title="{TEMPLATE_SHA}"' in board.content.decode()


def test_a_template_with_an_unknown_placeholder_is_a_form_error(client, lead, version):
    client.force_login(lead)
    url = reverse("predictions-upload", args=[version.project.slug, version.number])
    response = client.post(
        url,
        {
            "judge": "j",
            "file": SimpleUploadedFile("critic.jsonl", jsonl(critic_lines())),
            "template": SimpleUploadedFile("bad.txt", b"$question\n$answer\n"),
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "line 2" in html and "unknown placeholder $answer" in html
    assert not Job.objects.exists() and not JudgeRun.objects.exists()


def test_api_accepts_critic_lines_and_a_template_file(lead, version):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(lead, scope='predictions')}")
    url = reverse("api-predictions-submit", args=[version.project.slug, version.number])
    response = api.post(url, {"judge": "j1", "predictions": critic_lines()}, format="json")
    assert response.status_code == 201, response.content
    assert dict(Prediction.objects.values_list("question_id", "prediction")) == HAND_PREDICTIONS

    response = api.post(
        url,
        {
            "judge": "j2",
            "file": SimpleUploadedFile("critic.jsonl", jsonl(critic_lines())),
            "template": SimpleUploadedFile("t.txt", TEMPLATE.encode()),
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert JudgeRun.objects.get(judge="j2").template_hash == TEMPLATE_SHA

    response = api.post(
        url,
        {
            "judge": "j3",
            "file": SimpleUploadedFile("critic.jsonl", jsonl(critic_lines())),
            "template": SimpleUploadedFile("t.txt", TEMPLATE.encode()),
            "template_hash": "0" * 64,
        },
        format="multipart",
    )
    assert response.status_code == 400
    body = response.json()
    assert [e["field"] for e in body["errors"]] == ["template_hash"]
    assert "0" * 64 in body["detail"]
    assert not JudgeRun.objects.filter(judge="j3").exists()


def test_the_upload_summary_says_missing_rows_count_as_wrong(version, lead):
    from judging.services.scoring import judge_run_upload
    from tests.judging.web_data import predictions_file

    result = judge_run_upload(
        version=version, judge="partial", file=predictions_file(critic_lines()[2:]), by=lead
    )
    assert result.summary() == (
        "Stored run 1 of partial: 7 predictions; "
        "2 dataset rows without a prediction count as wrong."
    )
    assert result.run.stats["missing"] == 2


def test_web_upload_of_an_lmms_eval_samples_log(
    client, lead, version, django_capture_on_commit_callbacks
):
    """lmms-eval's --log_samples lines (metric records carry the row ids) upload as they are."""
    lines = []
    for doc_id, line in enumerate(critic_lines()):
        qid = line["question_id"]
        record = {
            "question_id": qid,
            "prompt_id": qid.split("__")[0],
            "criterion": qid.split("__")[1],
            "benchmark_type": "reasoning" if qid.startswith("q") else "open-ended",
            "parse_method": "direct",
        }
        lines.append(
            {
                "doc_id": doc_id,
                "target": "model_a",
                "filtered_resps": [line["critic"]],
                "doc_hash": "0" * 64,
                "overall": record,
                "pluralistic_acc": record,
                "input": "The judge prompt.",
            }
        )
    client.force_login(lead)
    url = reverse("predictions-upload", args=[version.project.slug, version.number])
    upload = SimpleUploadedFile("2026-06-01T10-00-00_samples_multi_crit.jsonl", jsonl(lines))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"judge": "lmms-judge", "file": upload})
    assert response.status_code == 302
    job = Job.objects.get(kind=Job.Kind.SCORE_JUDGE)
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert dict(Prediction.objects.values_list("question_id", "prediction")) == HAND_PREDICTIONS
    first = lines[0]["overall"]["question_id"]
    assert Prediction.objects.get(question_id=first).raw_output == lines[0]["filtered_resps"][0]
    run = JudgeRun.objects.get()
    assert run.stats["lines"] == 9 and run.stats["unparsable"] == 0
    figures = Scorecard.objects.get(judge="lmms-judge", split="open_ended").figures
    headline = {k: figures[k]["value"] for k in ("pacc", "cmr", "tos", "avg", "overall")}
    assert headline == {k: HAND_EXPECTED_OPEN[k] for k in headline}
