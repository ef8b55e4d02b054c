"""The calibration discussion: who may see it, what it shows, and the lead's actions."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import ProjectMember, ReferenceLabel, Vote
from annotation.selectors.calibration import calibration_discussion
from annotation.services.projects import member_add
from tests.conftest import make_sample, make_user

pytestmark = pytest.mark.django_db


def vote_all(member: ProjectMember, seeds, criteria, choice="A", round_=None, note=""):
    """Cast a calibration vote on every seed item for this member."""
    for sample in seeds:
        for criterion in criteria[sample.split]:
            Vote.objects.create(
                sample=sample,
                criterion=criterion,
                annotator=member.user,
                round=round_ or member.calibration_round,
                choice=choice,
                rationale=f"{member.user.username} thinks {choice} on {criterion.key}{note}",
            )


def url(project, **params):
    base = reverse("calibration", args=[project.slug])
    if params:
        base += "?" + "&".join(f"{k}={v}" for k, v in params.items())
    return base


def test_anonymous_is_sent_to_login(client, project):
    response = client.get(url(project))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_outsider_gets_403(client, project, outsider, seeds):
    client.force_login(outsider)
    assert client.get(url(project)).status_code == 403


def test_annotator_who_has_not_finished_the_seed_round_is_told_when_it_opens(
    client, project, annotators, seeds, criteria
):
    first, second = (ProjectMember.objects.get(project=project, user=u) for u in annotators[:2])
    # One seed sample short of the whole round (10 of 15 items).
    vote_all(first, seeds[:2], criteria)
    vote_all(second, seeds, criteria, "B")
    client.force_login(annotators[0])
    response = client.get(url(project))
    assert response.status_code == 200
    body = response.content.decode()
    assert "The calibration discussion opens when you finish the seed items" in body
    assert "<strong>10 of 15</strong> done, 5 to go." in body
    # Nothing of the discussion itself: no votes, rationales or agreement.
    assert "thinks" not in body and "agrees with the reference" not in body


def test_annotator_who_finished_sees_everyones_votes_read_only(
    client, project, annotators, seeds, criteria
):
    first, second = (ProjectMember.objects.get(project=project, user=u) for u in annotators[:2])
    vote_all(first, seeds, criteria, "A")
    vote_all(second, seeds[:1], criteria, "B")
    client.force_login(annotators[0])
    response = client.get(url(project))
    assert response.status_code == 200
    body = response.content.decode()
    assert "ann1 thinks A on completeness" in body
    assert "ann2 thinks B on completeness" in body
    assert "read-only" in body
    assert "Mark calibrated" not in body
    assert "Another round" not in body
    assert "Set reference" not in body and "Change reference" not in body


def test_discussion_never_shows_formal_votes(client, project, annotators, seeds, criteria):
    first = ProjectMember.objects.get(project=project, user=annotators[0])
    vote_all(first, seeds, criteria)
    formal = make_sample(project, "formal-1", question="A formal question")
    Vote.objects.create(
        sample=formal,
        criterion=criteria["open_ended"][0],
        annotator=annotators[1],
        round=0,
        choice="B",
        rationale="FORMAL-SECRET rationale of another annotator",
    )
    client.force_login(annotators[0])
    body = client.get(url(project)).content.decode()
    assert "FORMAL-SECRET" not in body
    assert "A formal question" not in body


def test_lead_sees_reference_votes_agreement_and_actions(
    client, project, lead, annotators, seeds, criteria
):
    first, second = (ProjectMember.objects.get(project=project, user=u) for u in annotators[:2])
    completeness = criteria["open_ended"][0]
    ReferenceLabel.objects.create(sample=seeds[0], criterion=completeness, preference="A")
    vote_all(first, seeds, criteria, "A")
    vote_all(second, seeds, criteria, "B")
    client.force_login(lead)
    response = client.get(url(project))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Seed question one?" in body
    assert "Mark calibrated" in body and "Another round" in body
    assert "ag-yes" in body and "ag-no" in body  # ✓ for ann1, ✗ for ann2 on the referenced item
    # Model names are never shown, not even to the lead.
    assert "model-x" not in body and "model-y" not in body
    summaries = {m.member.user.username: m for m in response.context["discussion"].members}
    assert summaries["ann1"].agree == 1 and summaries["ann1"].compared == 1
    assert summaries["ann2"].agree == 0 and summaries["ann2"].compared == 1
    assert summaries["ann1"].finished and not summaries["ann3"].finished
    per_criterion = {c.criterion.key: c for c in summaries["ann1"].per_criterion}
    assert per_criterion["completeness"].percent == 100
    assert per_criterion["clarity"].percent is None


def test_filters_disagreements_criterion_and_split(
    client, project, lead, annotators, seeds, criteria
):
    first, second = (ProjectMember.objects.get(project=project, user=u) for u in annotators[:2])
    vote_all(first, seeds, criteria, "A")
    vote_all(second, seeds, criteria, "A")
    completeness = criteria["open_ended"][0]
    # One disagreement: ann2 says B on seed-oe-2 / completeness.
    Vote.objects.filter(annotator=second.user, sample=seeds[1], criterion=completeness).update(
        choice="B"
    )
    client.force_login(lead)
    n_open = len(criteria["open_ended"])
    n_reason = len(criteria["reasoning"])

    everything = client.get(url(project)).context["discussion"]
    assert everything.n_shown == 2 * n_open + n_reason
    assert everything.n_disagreements == 1

    only = client.get(url(project, disagreements=1)).context["discussion"]
    assert only.n_shown == 1
    (group,) = only.samples
    assert group.sample == seeds[1]
    assert [item.criterion for item in group.items] == [completeness]

    by_criterion = client.get(url(project, criterion=completeness.pk)).context["discussion"]
    assert by_criterion.n_shown == 2
    assert {g.sample.external_id for g in by_criterion.samples} == {"seed-oe-1", "seed-oe-2"}

    reasoning = client.get(url(project, split="reasoning")).context["discussion"]
    assert reasoning.n_shown == n_reason
    assert [g.sample.external_id for g in reasoning.samples] == ["seed-r-1"]


def test_disagreement_with_the_reference_counts_even_when_annotators_agree(
    project, annotators, seeds, criteria
):
    first = ProjectMember.objects.get(project=project, user=annotators[0])
    vote_all(first, seeds, criteria, "A")
    ReferenceLabel.objects.create(
        sample=seeds[0], criterion=criteria["open_ended"][0], preference="tie"
    )
    discussion = calibration_discussion(project=project, only_disagreements=True)
    assert discussion.n_shown == 1


def test_latest_round_vote_is_shown_with_its_round(
    client, project, lead, annotators, seeds, criteria
):
    first = ProjectMember.objects.get(project=project, user=annotators[0])
    vote_all(first, seeds, criteria, "A", note=" in round one")
    first.calibration_round = 2
    first.save()
    Vote.objects.create(
        sample=seeds[0],
        criterion=criteria["open_ended"][0],
        annotator=first.user,
        round=2,
        choice="B",
        rationale="changed my mind in round two",
    )
    client.force_login(lead)
    body = client.get(url(project)).content.decode()
    assert "changed my mind in round two" in body
    # Items not yet revoted in round 2 still show the round-1 answer, marked as such.
    assert "ann1 thinks A on clarity in round one" in body
    assert "(r1)" in body
    summary = next(
        m for m in client.get(url(project)).context["discussion"].members if m.member == first
    )
    assert summary.done == 1


def test_discussion_query_count_does_not_grow_with_annotators(project, seeds, criteria):
    def measure():
        with CaptureQueriesContext(connection) as ctx:
            calibration_discussion(project=project)
        return len(ctx.captured_queries)

    for i in range(2):
        member_add(project=project, user=make_user(f"few{i}"))
    for member in ProjectMember.objects.filter(project=project):
        vote_all(member, seeds, criteria)
    few = measure()
    for i in range(6):
        member = member_add(project=project, user=make_user(f"many{i}"))
        vote_all(member, seeds, criteria)
    assert measure() == few


def test_lead_marks_an_annotator_calibrated(client, project, lead, annotators, seeds):
    member = ProjectMember.objects.get(project=project, user=annotators[0])
    client.force_login(lead)
    next_url = url(project, disagreements=1)
    # No vote on a referenced item yet: below any threshold, so it takes the confirmation.
    response = client.post(
        reverse("calibration-mark", args=[project.slug, member.pk]),
        {"next": next_url, "confirm": "1"},
    )
    assert response.status_code == 302
    assert response.url == next_url
    member.refresh_from_db()
    assert member.calibrated_at is not None
    assert member.calibrated_by == lead


def test_lead_sends_an_annotator_to_another_round_keeping_votes(
    client, project, lead, annotators, seeds, criteria
):
    member = ProjectMember.objects.get(project=project, user=annotators[0])
    vote_all(member, seeds, criteria)
    n_votes = Vote.objects.filter(annotator=member.user).count()
    client.force_login(lead)
    response = client.post(reverse("calibration-round", args=[project.slug, member.pk]))
    assert response.status_code == 302
    assert response.url == url(project)
    member.refresh_from_db()
    assert member.calibration_round == 2
    assert member.calibrated_at is None
    assert Vote.objects.filter(annotator=member.user).count() == n_votes


def test_redirect_target_must_be_the_discussion(client, project, lead, annotators, seeds):
    member = ProjectMember.objects.get(project=project, user=annotators[0])
    client.force_login(lead)
    response = client.post(
        reverse("calibration-mark", args=[project.slug, member.pk]),
        {"next": "https://evil.example/"},
    )
    assert response.url == url(project)


def test_lead_sets_and_changes_a_reference_label(client, project, lead, seeds, criteria):
    client.force_login(lead)
    criterion = criteria["open_ended"][1]
    post = {"sample_id": seeds[0].pk, "criterion_id": criterion.pk, "preference": "B"}
    response = client.post(reverse("reference-set", args=[project.slug]), post)
    assert response.status_code == 302
    ref = ReferenceLabel.objects.get(sample=seeds[0], criterion=criterion)
    assert ref.preference == "B"
    assert ref.source == ReferenceLabel.Source.LEAD
    client.post(reverse("reference-set", args=[project.slug]), {**post, "preference": "tie"})
    ref.refresh_from_db()
    assert ref.preference == "tie"
    assert ReferenceLabel.objects.filter(sample=seeds[0], criterion=criterion).count() == 1


def test_reference_needs_a_seed_sample_and_a_criterion_of_its_split(
    client, project, lead, seeds, criteria
):
    client.force_login(lead)
    formal = make_sample(project, "formal-x")
    reference_url = reverse("reference-set", args=[project.slug])
    response = client.post(
        reference_url,
        {"sample_id": formal.pk, "criterion_id": criteria["open_ended"][0].pk, "preference": "A"},
        follow=True,
    )
    assert "Choose a seed sample of this project (sample_id)." in response.content.decode()
    response = client.post(
        reference_url,
        {"sample_id": seeds[0].pk, "criterion_id": criteria["reasoning"][0].pk, "preference": "A"},
        follow=True,
    )
    assert "a criterion of the sample&#x27;s split (criterion_id)" in response.content.decode()
    assert not ReferenceLabel.objects.exists()


@pytest.mark.parametrize("name", ["calibration-mark", "calibration-round"])
def test_annotators_cannot_use_the_lead_actions(client, project, annotators, seeds, criteria, name):
    member = ProjectMember.objects.get(project=project, user=annotators[0])
    vote_all(member, seeds, criteria)
    client.force_login(annotators[0])
    response = client.post(reverse(name, args=[project.slug, member.pk]))
    assert response.status_code == 403
    member.refresh_from_db()
    assert member.calibrated_at is None and member.calibration_round == 1


def test_annotators_cannot_set_references(client, project, annotators, seeds, criteria):
    client.force_login(annotators[0])
    response = client.post(
        reverse("reference-set", args=[project.slug]),
        {"sample_id": seeds[0].pk, "criterion_id": criteria["open_ended"][0].pk, "preference": "A"},
    )
    assert response.status_code == 403
    assert not ReferenceLabel.objects.exists()


def test_member_of_another_project_cannot_be_marked_here(client, project, lead, seeds):
    from annotation.services.projects import project_create

    other = project_create(name="Other", slug="other")
    stranger = member_add(project=other, user=make_user("stranger"))
    client.force_login(lead)
    response = client.post(reverse("calibration-mark", args=[project.slug, stranger.pk]))
    assert response.status_code == 404  # get_member: another project's member looks missing
    stranger.refresh_from_db()
    assert stranger.calibrated_at is None
