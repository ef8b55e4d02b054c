"""The aggregation-start view: who may start the job, what htmx and plain POSTs get back."""

from __future__ import annotations

import pytest
from django.urls import reverse

from aggregation.models import CriterionLabel
from core.models import Job
from tests.conftest import make_sample

from .votes import cast_all, criteria_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def url(project) -> str:
    return reverse("aggregation-start", args=[project.slug])


def test_url():
    assert reverse("aggregation-start", args=["p"]) == "/projects/p/aggregate/"


def test_anonymous_is_sent_to_login_and_nothing_is_enqueued(client, url):
    response = client.post(url)
    assert response.status_code == 302
    assert reverse("login") in response["Location"]
    assert not Job.objects.exists()


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_non_leads_are_refused_and_nothing_is_enqueued(client, url, who, request):
    client.force_login(request.getfixturevalue(who))
    response = client.post(url)
    assert response.status_code == 403
    assert not Job.objects.exists()
    assert not CriterionLabel.objects.exists()


def test_get_is_not_allowed(client, lead, url):
    client.force_login(lead)
    assert client.get(url).status_code == 405
    assert not Job.objects.exists()


def test_unknown_split_is_a_bad_request(client, lead, url):
    client.force_login(lead)
    response = client.post(url, {"split": "everything"})
    assert response.status_code == 400
    assert "Unknown split" in response.content.decode()
    assert not Job.objects.exists()


def test_plain_post_runs_the_job_and_redirects_to_the_dashboard(
    client, lead, project, annotators, url, django_capture_on_commit_callbacks
):
    c = criteria_of(project)
    sample = make_sample(project, "s1")
    cast_all(sample, c[0], annotators[:3], "AAt")
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"split": "open_ended"})
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard", args=[project.slug])
    job = Job.objects.get()
    assert (job.kind, job.project, job.created_by, job.params) == (
        Job.Kind.AGGREGATE,
        project,
        lead,
        {"split": "open_ended"},
    )
    assert job.status == Job.Status.SUCCEEDED  # eager Celery in this test
    label = CriterionLabel.objects.get()
    assert (label.outcome, label.preference, label.job_id) == ("kept_majority_tie", "A", job.pk)


def test_htmx_post_returns_the_job_card(client, lead, project, url):
    client.force_login(lead)
    response = client.post(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    job = Job.objects.get()
    html = response.content.decode()
    assert f'id="job-{job.pk}"' in html
    assert reverse("job-status", args=[job.pk]) in html
    assert "<html" not in html
    assert "Aggregation started (all splits)" in response["HX-Trigger"]
    assert job.params == {"split": None}


def test_panel_renders_buttons_and_the_latest_job(rf, lead, project):
    from django.template.loader import render_to_string

    html = render_to_string(
        "aggregation/_aggregate_panel.html", {"project": project, "last_job": None}
    )
    action = reverse("aggregation-start", args=[project.slug])
    assert f'action="{action}"' in html and f'hx-post="{action}"' in html
    assert "Aggregate all" in html
    assert 'name="split" value="open_ended"' in html and 'value="reasoning"' in html
    assert "No aggregation has run yet." in html
    job = Job.objects.create(kind=Job.Kind.AGGREGATE, project=project, total=10, done=4)
    html = render_to_string(
        "aggregation/_aggregate_panel.html", {"project": project, "last_job": job}
    )
    assert f'id="job-{job.pk}"' in html and 'hx-trigger="every 1s"' in html
    assert "4 / 10" in html
