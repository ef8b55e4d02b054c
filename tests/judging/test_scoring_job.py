"""The upload job on a REAL Celery worker: upload through the page, poll the Job, read the card."""

import pytest
from django.urls import reverse

from core.models import Job
from judging.models import JudgeRun, Prediction, Scorecard
from tests.celery_worker import wait_for
from tests.judging.web_data import (
    HAND_PREDICTIONS,
    flipped,
    make_version,
    prediction_lines,
    predictions_upload,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.celery_worker,
    pytest.mark.usefixtures("celery_worker"),
]


def finished(job_id: int) -> bool:
    return Job.objects.get(pk=job_id).is_finished


def test_uploads_are_stored_and_scored_by_the_worker(client, lead, project):
    version = make_version(project)
    client.force_login(lead)
    url = reverse("predictions-upload", args=[project.slug, version.number])
    run3 = flipped(HAND_PREDICTIONS, "p1__hallucination")
    run3["p2__visual-grounding"] = "no idea"
    uploads = [
        prediction_lines(),
        prediction_lines(flipped(HAND_PREDICTIONS, "p1__hallucination", "p2__visual-grounding")),
        prediction_lines(run3),
    ]
    for n, lines in enumerate(uploads, start=1):
        response = client.post(
            url, {"judge": "judge-x", "template_hash": "t1", "file": predictions_upload(lines)}
        )
        assert response.status_code == 302
        job_id = int(response.url.rsplit("job=", 1)[1])
        # The page answers at once; the worker does the work.
        wait_for(lambda job_id=job_id: finished(job_id), timeout=60)
        job = Job.objects.get(pk=job_id)
        assert job.status == Job.Status.SUCCEEDED, job.error
        # The file's lines, all read (9), then the write and the scoring at the same count.
        assert job.done == job.total == 9
        # Once finished, the message says what was stored, not the last step of the run.
        assert job.message.startswith(f"Stored run {n} of judge-x: 9 predictions")

    assert [r.run_index for r in JudgeRun.objects.order_by("run_index")] == [1, 2, 3]
    assert Prediction.objects.count() == 27
    card = Scorecard.objects.get(version=version, judge="judge-x", split="open_ended")
    # Majority vote over the three runs (worked out in test_services): p1 hallucination fixed,
    # p2 visual-grounding a tie between an A and a B vote, so invalid.
    assert card.runs == 3
    assert (card.pacc, card.cmr, card.tos, card.avg) == (66.67, 100.0, 100.0, 83.33)
    assert card.figures["overall"]["value"] == 85.71
    assert card.figures["counts"]["invalid"] == 1

    page = client.get(response.url).content.decode()
    assert "Stored run 3 of judge-x: 9 predictions, 1 unparsable (counted as invalid)." in page


def test_a_refused_file_fails_the_job_with_line_and_field(client, lead, project):
    version = make_version(project)
    client.force_login(lead)
    url = reverse("predictions-upload", args=[project.slug, version.number])
    lines = [*prediction_lines(), prediction_lines()[0]]
    response = client.post(url, {"judge": "judge-x", "file": predictions_upload(lines)})
    job_id = int(response.url.rsplit("job=", 1)[1])
    wait_for(lambda: finished(job_id), timeout=60)
    job = Job.objects.get(pk=job_id)
    assert job.status == Job.Status.FAILED
    assert job.result["errors"][0]["line"] == 10
    assert job.result["errors"][0]["field"] == "question_id"
    assert "second prediction for 'p1__completeness'" in job.error
    assert not JudgeRun.objects.exists() and not Prediction.objects.exists()
