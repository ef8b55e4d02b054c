"""The lead's problem-report inbox: resolve, reassign, discard, and who sees what."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import ProblemReport, Sample, SampleStatus, Slot
from annotation.services import assignment, work
from tests.annotation.work_data import calibrate, make_formal


@pytest.fixture
def reported(project, annotators, lead):
    """ann1 holds a slot of f-000000 and reports it; ann2 and ann3 are calibrated."""
    for user in annotators[:3]:
        calibrate(project, user, lead)
    samples = make_formal(project, 2)
    item = work.work_next(project=project, annotator=annotators[0])
    report = work.problem_report(
        project=project,
        annotator=annotators[0],
        sample_id=item.sample.pk,
        kind=ProblemReport.Kind.BROKEN_IMAGE,
        note="The chart is blank.",
    )
    return {"report": report, "sample": item.sample, "samples": samples}


def close(client, project, report, **data):
    return client.post(reverse("report-close", args=[project.slug, report.pk]), data, follow=True)


def test_the_inbox_lists_open_reports_with_the_sample_and_the_reporter(
    client, project, reported, lead
):
    client.force_login(lead)
    html = client.get(reverse("reports", args=[project.slug])).content.decode()
    sample = reported["sample"]
    assert "1 open report" in html and "1 open reports" not in html
    assert sample.external_id in html and "Broken or missing image" in html
    assert "The chart is blank." in html and "ann1" in html
    assert reverse("sample-detail", args=[project.slug, sample.pk]) in html


def test_resolve_records_who_and_when_and_puts_the_sample_back(
    client, project, reported, lead, annotators
):
    client.force_login(lead)
    report, sample = reported["report"], reported["sample"]
    response = close(client, project, report, outcome="resolved", note="Image re-uploaded.")
    assert f"Report on {sample.external_id} resolved; the sample is back in the queue." in (
        response.content.decode()
    )
    report.refresh_from_db()
    assert (report.outcome, report.resolved_by, report.resolution) == (
        "resolved",
        lead,
        "Image re-uploaded.",
    )
    assert report.resolved_at is not None
    # The reporter may be served the sample again once the report is closed.
    slots = assignment.claim_candidates(
        project=project, user=annotators[0], now=timezone.now(), limit=10
    )
    assert sample.pk in {slot.sample_id for slot in slots}
    # Closed reports move to the closed tab, with who closed them.
    html = client.get(reverse("reports", args=[project.slug]) + "?state=closed").content.decode()
    assert "Resolved: back in the queue" in html and "by lead" in html


def test_reassign_gives_an_open_slot_to_the_chosen_annotator(
    client, project, reported, lead, annotators
):
    client.force_login(lead)
    report, sample = reported["report"], reported["sample"]
    close(client, project, report, outcome="reassigned", to=annotators[1].pk)
    report.refresh_from_db()
    assert (report.outcome, report.reassigned_to) == ("reassigned", annotators[1])
    assert Slot.objects.filter(sample=sample, annotator=annotators[1]).exists()


def test_reassign_without_an_annotator_or_to_the_reporter_is_refused(
    client, project, reported, lead, annotators
):
    client.force_login(lead)
    report = reported["report"]
    html = close(client, project, report, outcome="reassigned").content.decode()
    assert "to: Choose the annotator who gets the sample." in html
    html = close(client, project, report, outcome="reassigned", to=annotators[0].pk).content
    assert "Choose an annotator other than the one who reported it." in html.decode()
    report.refresh_from_db()
    assert report.resolved_at is None and report.outcome == ""


def test_discard_retires_the_sample_and_closes_every_open_report_on_it(
    client, project, reported, lead, annotators
):
    report, sample = reported["report"], reported["sample"]
    other = ProblemReport.objects.create(sample=sample, reporter=annotators[1], kind="other")
    client.force_login(lead)
    close(client, project, report, outcome="discarded")
    assert Sample.objects.get(pk=sample.pk).status == SampleStatus.RETIRED
    assert not Slot.objects.filter(
        sample=sample, annotator__isnull=False, completed_at__isnull=True
    ).exists()
    other.refresh_from_db()
    assert (other.outcome, other.resolved_by) == ("discarded", lead)


def test_a_closed_report_cannot_be_closed_again(client, project, reported, lead):
    client.force_login(lead)
    report = reported["report"]
    close(client, project, report, outcome="resolved")
    html = close(client, project, report, outcome="discarded").content.decode()
    assert "This report was already closed by lead on" in html
    report.refresh_from_db()
    assert report.outcome == "resolved"
    assert Sample.objects.get(pk=reported["sample"].pk).status == SampleStatus.ACTIVE


def test_an_unknown_outcome_is_refused_naming_the_field(client, project, reported, lead):
    client.force_login(lead)
    html = close(client, project, reported["report"], outcome="maybe").content.decode()
    assert "outcome: Choose resolve, reassign or discard." in html


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_only_the_lead_reads_or_closes_reports(
    client, project, reported, annotators, outsider, who
):
    client.force_login(annotators[0] if who == "annotator" else outsider)
    assert client.get(reverse("reports", args=[project.slug])).status_code == 403
    response = client.post(
        reverse("report-close", args=[project.slug, reported["report"].pk]),
        {"outcome": "resolved"},
    )
    assert response.status_code == 403
    assert ProblemReport.objects.get(pk=reported["report"].pk).resolved_at is None


def test_the_dashboard_links_the_open_count_to_the_inbox(client, project, reported, lead):
    client.force_login(lead)
    html = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert f'href="{reverse("reports", args=[project.slug])}"' in html
    assert "open problem report</div>" in html
