"""REST API: submit predictions (token scope or lead session) and read scorecards."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.services.projects import member_add
from judging.models import JudgeRun, Prediction, Scorecard
from tests.judging.web_data import (
    HAND_PREDICTIONS,
    jsonl,
    make_token,
    prediction_lines,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    return APIClient()


def submit_url(version):
    return reverse("api-predictions-submit", args=[version.project.slug, version.number])


def list_url(version):
    return reverse("api-scorecards", args=[version.project.slug, version.number])


def body(**extra):
    return {"judge": "judge-x", "predictions": prediction_lines(), **extra}


def auth(api, key):
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api


def test_anonymous_requests_get_401(api, version):
    assert api.post(submit_url(version), body(), format="json").status_code == 401
    assert api.get(list_url(version)).status_code == 401
    assert not JudgeRun.objects.exists()


def test_a_read_only_token_may_read_but_not_submit(api, lead, version):
    auth(api, make_token(lead, scope="read"))
    response = api.post(submit_url(version), body(), format="json")
    assert response.status_code == 403
    assert "read-only" in response.json()["detail"]
    assert not JudgeRun.objects.exists()
    assert api.get(list_url(version)).json() == []


def test_a_predictions_token_submits_and_gets_the_scorecards(api, lead, version):
    auth(api, make_token(lead, scope="read predictions"))
    response = api.post(submit_url(version), body(template_hash="t9"), format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert [(r["judge"], r["run_index"], r["template_hash"]) for r in data["runs"]] == [
        ("judge-x", 1, "t9")
    ]
    assert data["runs"][0]["stats"]["accepted"] == 9
    cards = {c["split"]: c for c in data["scorecards"]}
    open_card = cards["open_ended"]
    assert (open_card["pacc"], open_card["cmr"], open_card["tos"], open_card["avg"]) == (
        33.33,
        66.67,
        100.0,
        66.67,
    )
    assert open_card["overall"] == 71.43
    assert open_card["per_criterion"] == {
        "completeness": 100.0,
        "visual-grounding": 50.0,
        "hallucination": 50.0,
    }
    assert list(open_card["per_criterion"]) == ["completeness", "visual-grounding", "hallucination"]
    assert open_card["counts"]["conflict_pairs"] == 3
    assert JudgeRun.objects.get().source == JudgeRun.Source.API
    assert Prediction.objects.count() == 9


def test_a_bad_line_is_a_400_naming_line_and_field_and_stores_nothing(api, lead, version):
    auth(api, make_token(lead, scope="predictions"))
    lines = prediction_lines()
    lines[3] = {**lines[3], "split": "reasoning"}
    response = api.post(submit_url(version), body(predictions=lines), format="json")
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert (error["line"], error["field"]) == (4, "split")
    assert "is in split 'open_ended'" in error["message"]
    assert response.json()["detail"].startswith("line 4, field 'split':")
    assert not JudgeRun.objects.exists() and not Scorecard.objects.exists()


def test_every_bad_line_is_in_the_400(api, lead, version):
    auth(api, make_token(lead, scope="predictions"))
    lines = prediction_lines()
    lines[1] = {**lines[1], "split": "reasoning"}
    lines[5] = {"question_id": "nope", "prediction": "model_a"}
    response = api.post(submit_url(version), body(predictions=lines), format="json")
    assert response.status_code == 400
    assert [(e["line"], e["field"]) for e in response.json()["errors"]] == [
        (2, "split"),
        (6, "question_id"),
    ]
    assert response.json()["detail"].endswith("(and 1 more error)")
    assert not JudgeRun.objects.exists()


def test_the_request_needs_predictions_or_a_file(api, lead, version):
    auth(api, make_token(lead, scope="predictions"))
    response = api.post(submit_url(version), {"judge": "j"}, format="json")
    assert response.status_code == 400
    assert [(e["line"], e["field"]) for e in response.json()["errors"]] == [(None, "predictions")]
    assert response.json()["detail"].startswith("predictions: Send either a predictions list")


def test_a_lead_session_uploads_a_file(api, lead, version):
    api.force_login(lead)
    upload = SimpleUploadedFile("judge.jsonl", jsonl(prediction_lines(run=1)))
    response = api.post(
        submit_url(version), {"judge": "judge-x", "file": upload, "split": ""}, format="multipart"
    )
    assert response.status_code == 201, response.content
    assert JudgeRun.objects.get().judge == "judge-x"
    stored = dict(Prediction.objects.values_list("question_id", "prediction"))
    assert stored == HAND_PREDICTIONS


def test_an_annotator_session_cannot_submit_but_reads(api, project, annotator, lead, version):
    member_add(project=project, user=annotator)
    auth(api, make_token(lead, scope="predictions"))
    assert api.post(submit_url(version), body(), format="json").status_code == 201
    reader = APIClient()
    reader.force_login(annotator)
    assert reader.post(submit_url(version), body(), format="json").status_code == 403
    assert [c["judge"] for c in reader.get(list_url(version)).json()] == ["judge-x", "judge-x"]


def test_outsider_tokens_see_no_project(api, outsider, version):
    auth(api, make_token(outsider, scope="read predictions"))
    assert api.get(list_url(version)).status_code == 403
    assert api.post(submit_url(version), body(), format="json").status_code == 403


def test_scorecards_list_filters_and_detail_has_every_figure(api, lead, version):
    auth(api, make_token(lead, scope="read predictions"))
    api.post(submit_url(version), body(), format="json")
    # Every verdict of the hand-worked judge flipped: right exactly where it was wrong.
    opposite = {
        k: ("model_a" if v == "model_b" else "model_b") for k, v in HAND_PREDICTIONS.items()
    }
    api.post(
        submit_url(version),
        body(judge="org/other", predictions=prediction_lines(opposite)),
        format="json",
    )
    listed = api.get(list_url(version), {"split": "open_ended"}).json()
    assert [(c["judge"], c["pacc"]) for c in listed] == [("judge-x", 33.33), ("org/other", 0.0)]
    assert [c["judge"] for c in api.get(list_url(version), {"judge": "org/other"}).json()] == [
        "org/other",
        "org/other",
    ]

    detail_url = listed[1]["url"]
    assert detail_url.endswith("/scorecards/open_ended/org/other/")
    detail = api.get(detail_url).json()
    assert detail["judge"] == "org/other" and detail["split"] == "open_ended"
    figures = detail["figures"]
    assert figures["counts"]["rows"] == 7
    assert figures["per_criterion"]["completeness"]["acc"] == 0.0
    assert figures["pacc"]["ci"] is not None
    assert figures["vote"]["n_runs"] == 1
    missing = reverse("api-scorecard", args=[version.project.slug, 1, "reasoning", "nobody"])
    assert api.get(missing).status_code == 404


def test_the_schema_documents_the_judging_endpoints(api, lead):
    api.force_login(lead)
    response = api.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    paths = response.json()["paths"]
    submit = paths["/api/projects/{slug}/versions/{number}/predictions/"]["post"]
    assert submit["operationId"] == "predictions_submit"
    assert set(submit["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert {"201", "400", "401", "403"} <= set(submit["responses"])
    assert "/api/projects/{slug}/versions/{number}/scorecards/{split}/{judge}/" in paths


# --- Two judges compared ----------------------------------------------------------------------


def compare_url(version):
    return reverse("api-judges-compare", args=[version.project.slug, version.number])


def test_compare_gives_the_paired_figures_of_the_page(api, lead, project):
    from judging.paired import N_BOOT
    from tests.judging.paired_data import LOGIC_P, bootstrap_p, paired_version

    version = paired_version(project, lead, judges=("strong", "weak"))
    auth(api, make_token(lead, scope="read"))
    response = api.get(compare_url(version), {"a": "strong", "b": "weak", "split": "reasoning"})
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["judge_a"], data["judge_b"], data["split"]) == ("strong", "weak", "reasoning")
    assert (data["alpha"], data["n_boot"], data["seed"], data["family"]) == (0.05, N_BOOT, 0, 8)
    crit = {f["key"]: f for f in data["criteria"]}
    assert list(crit) == ["grounding", "logic", "hallucination"]  # the protocol order
    assert crit["logic"] == {
        "key": "logic", "test": "mcnemar", "a": 100.0, "b": 0.0, "diff": 100.0, "n": 12,
        "p": LOGIC_P, "ci": None, "only_a": 12, "only_b": 0, "p_holm": 8 * LOGIC_P,
        "significant": True, "verdict": "A better",
    }  # fmt: skip
    assert [crit["grounding"][k] for k in ("only_a", "only_b", "p", "p_holm", "verdict")] == [
        1, 0, 1.0, 1.0, "not distinguishable",
    ]  # fmt: skip
    head = {f["key"]: f for f in data["headline"]}
    assert list(head) == ["pacc", "cmr", "tos", "avg", "overall"]
    assert head["pacc"]["ci"] == [100.0, 100.0]
    assert head["pacc"]["p"] == pytest.approx(bootstrap_p(N_BOOT))
    assert head["pacc"]["p_holm"] == pytest.approx(7 * bootstrap_p(N_BOOT))
    assert (head["cmr"]["a"], head["cmr"]["b"], head["cmr"]["diff"]) == (100.0, 45.83, 54.17)
    assert head["cmr"]["n"] == 24 and head["cmr"]["verdict"] == "A better"
    assert head["cmr"]["ci"] == [50.0, 62.5]  # as the command prints it (same draws)
    assert (head["tos"]["diff"], head["tos"]["p_holm"], head["tos"]["verdict"]) == (
        0.0, 1.0, "not distinguishable",
    )  # fmt: skip


def test_compare_names_the_missing_or_unknown_parameter(api, lead, project):
    from tests.judging.paired_data import paired_version

    version = paired_version(project, lead, judges=("strong", "weak"))
    auth(api, make_token(lead, scope="read"))
    url = compare_url(version)
    response = api.get(url, {"a": "strong"})
    assert response.status_code == 400
    assert set(response.json()) == {"b", "split"}
    response = api.get(url, {"a": "strong", "b": "weak", "split": "nope"})
    assert response.status_code == 400 and list(response.json()) == ["split"]
    response = api.get(url, {"a": "strong", "b": "nobody", "split": "reasoning"})
    assert response.status_code == 400
    assert response.json() == {
        "b": ["No judge 'nobody' is scored on the reasoning split of this version."]
    }
    # Scored on reasoning only: on the open-ended split both are unknown.
    response = api.get(url, {"a": "strong", "b": "weak", "split": "open_ended"})
    assert response.status_code == 400 and set(response.json()) == {"a", "b"}
