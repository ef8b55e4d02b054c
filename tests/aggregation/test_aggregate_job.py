"""The aggregation job end to end: a lead's POST, a real Celery worker on Redis, stored labels."""

from __future__ import annotations

import pytest
from django.urls import reverse

from aggregation.models import AgreementSnapshot, CriterionLabel
from core.models import Job
from tests.celery_worker import wait_for
from tests.conftest import make_sample

from .votes import cast_all, criteria_of


@pytest.mark.django_db(transaction=True)
def test_aggregation_runs_in_a_real_worker(client, lead, project, annotators, celery_worker):
    c = criteria_of(project)
    patterns = ["AAA", "BBt", "ABA", "ttA", "AA"]
    samples = [make_sample(project, f"s{i}") for i in range(4)]
    for i, sample in enumerate(samples):
        trio = annotators[i : i + 3]
        for j, criterion in enumerate(c):
            cast_all(sample, criterion, trio, patterns[(i + j) % 5])
    client.force_login(lead)
    response = client.post(
        reverse("aggregation-start", args=[project.slug]), headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    job = Job.objects.get()

    def finished() -> bool:
        job.refresh_from_db()
        return job.is_finished

    wait_for(finished, timeout=90)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.started_at and job.finished_at and job.done == job.total == 4 * 14
    assert job.result["splits"]["open_ended"]["labels"] == 20
    assert "Open-ended: 8 of 20 labels kept" in job.result["summary"]
    labels = CriterionLabel.objects.filter(job=job)
    assert labels.count() == 20
    expected = {
        "AAA": ("kept_unanimous", "A"),
        "BBt": ("kept_majority_tie", "B"),
        "ABA": ("dropped_split", ""),
        "ttA": ("dropped_ties", ""),
        "AA": ("dropped_missing", ""),
    }
    for i, sample in enumerate(samples):
        for j, criterion in enumerate(c):
            label = labels.get(sample=sample, criterion=criterion)
            assert (label.outcome, label.preference) == expected[patterns[(i + j) % 5]]
    snapshot = AgreementSnapshot.objects.get(project=project, split="open_ended")
    assert snapshot.job_id == job.pk and snapshot.figures["votes"] == 4 * 14
    # The polled card now shows the outcome.
    card = client.get(reverse("job-status", args=[job.pk]), headers={"HX-Request": "true"})
    assert "Succeeded" in card.content.decode() and "8 of 20 labels kept" in card.content.decode()
