"""The work queue under early stopping and routing: who is not asked, slots that complete."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from annotation.models import Choice, Criterion, PanelLabel, RoutingPolicy, Slot, Vote
from annotation.services import assignment, routing, voting, work
from tests.annotation.race import counters_drift
from tests.annotation.work_data import GOOD, calibrate, make_formal


def setup_project(project, lead, annotators, *, n=1, stop=True, route=False, share="0"):
    project.annotators_per_sample = 3
    project.batch_size = 1
    project.shuffle_ab = False
    project.work_order = "sample_major"
    project.early_stopping = stop
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER if route else RoutingPolicy.OFF
    project.audit_share = Decimal(share)
    project.save()
    samples = make_formal(project, n)
    for user in annotators[:4]:
        calibrate(project, user, lead)
    crits = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    return samples, crits


def vote(project, user, sample, criterion, choice):
    return voting.vote_submit(
        project=project,
        annotator=user,
        sample_id=sample.pk,
        criterion_id=criterion.pk,
        shown_choice=choice,
        rationale=GOOD,
        seconds=2.0,
    )


def queue_of(project, user):
    """Every item the annotator is asked, voting A on each; returns the criterion keys."""
    asked = []
    for _ in range(50):
        item = work.work_next(project=project, annotator=user)
        if item is None:
            return asked
        asked.append(item.criterion.key)
        vote(project, user, item.sample, item.criterion, "A")
    raise AssertionError("the queue did not end")


@pytest.mark.django_db
def test_the_third_annotator_is_not_asked_a_split_criterion(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators)
    one, two, three = annotators[:3]
    first = crits[0]
    assert work.work_next(project=project, annotator=one).sample == sample
    assert work.work_next(project=project, annotator=two).sample == sample
    vote(project, one, sample, first, "A")
    vote(project, two, sample, first, "B")
    asked = queue_of(project, three)
    assert asked == [c.key for c in crits[1:]]  # their other criteria stay
    slot = Slot.objects.get(sample=sample, annotator=three)
    assert slot.completed_at is not None
    assert not Vote.objects.filter(annotator=three, criterion=first).exists()
    assert counters_drift(project) == {}  # the slot the queue completed moved the counters


@pytest.mark.django_db
def test_whoever_comes_later_is_the_one_not_asked(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators)
    one, two, three = annotators[:3]
    first = crits[0]
    for user in (one, two, three):
        work.work_next(project=project, annotator=user)
    vote(project, three, sample, first, "A")  # the third claimer votes first
    vote(project, one, sample, first, "B")
    asked = queue_of(project, two)
    assert first.key not in asked and len(asked) == len(crits) - 1


@pytest.mark.django_db
def test_a_slot_whose_remaining_criteria_stop_completes_at_once(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators)
    one, two, three = annotators[:3]
    for user in (one, two, three):
        work.work_next(project=project, annotator=user)
    for criterion in crits[1:]:
        vote(project, three, sample, criterion, "A")
    slot = Slot.objects.get(sample=sample, annotator=three)
    assert slot.completed_at is None  # the first criterion is still theirs to answer
    vote(project, one, sample, crits[0], "A")
    vote(project, two, sample, crits[0], "B")  # now it can no longer be kept
    slot.refresh_from_db()
    assert slot.completed_at is not None
    assert work.work_next(project=project, annotator=three) is None
    assert counters_drift(project) == {}


@pytest.mark.django_db
def test_a_sample_that_asks_nothing_more_is_not_claimable(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators)
    one, two, three = annotators[:3]
    for user, choice in ((one, "A"), (two, "B")):
        work.work_next(project=project, annotator=user)
        for criterion in crits:
            vote(project, user, sample, criterion, choice)
    third = Slot.objects.get(sample=sample, annotator__isnull=True)
    assert third.completed_at is not None  # settled unheld
    now = assignment.timezone.now()
    assert assignment.claim_candidates(project=project, user=three, now=now, limit=5) == []
    assert assignment.slots_claim(project=project, user=three) == 0
    assert work.work_next(project=project, annotator=three) is None


@pytest.mark.django_db
def test_the_audit_share_gets_every_vote(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators, share="1")
    assert routing.sample_audited(project, sample)
    one, two, three = annotators[:3]
    for user, choice in ((one, "A"), (two, "B")):
        work.work_next(project=project, annotator=user)
        for criterion in crits:
            vote(project, user, sample, criterion, choice)
    assert queue_of(project, three) == [c.key for c in crits]


@pytest.mark.django_db
def test_early_stopping_off_asks_every_vote(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators, stop=False)
    one, two, three = annotators[:3]
    for user, choice in ((one, "A"), (two, "B")):
        work.work_next(project=project, annotator=user)
        for criterion in crits:
            vote(project, user, sample, criterion, choice)
    assert queue_of(project, three) == [c.key for c in crits]


def panel(sample, criteria, choice="A"):
    PanelLabel.objects.bulk_create(
        [
            PanelLabel(
                sample=sample,
                criterion=c,
                choice=choice,
                unanimous=True,
                consistent=True,
                routable=True,
                verdicts={"judge-1": {"ab": choice, "ba": choice}},
                judges=["judge-1"],
            )
            for c in criteria
        ]
    )


@pytest.mark.django_db
def test_routing_asks_one_verifier_and_the_full_protocol_when_overruled(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators, stop=False, route=True)
    panel(sample, crits, "A")
    one, two, three = annotators[:3]
    work.work_next(project=project, annotator=one)
    vote(project, one, sample, crits[0], "B")  # overruled: the full 3 votes
    for criterion in crits[1:]:
        vote(project, one, sample, criterion, "A")  # verified
    assert queue_of(project, two) == [crits[0].key]
    assert queue_of(project, three) == [crits[0].key]
    assert Vote.objects.filter(sample=sample).count() == len(crits) + 2


@pytest.mark.django_db
def test_a_fully_verified_sample_is_not_claimable(project, lead, annotators):
    (sample, other), crits = setup_project(project, lead, annotators, n=2, stop=False, route=True)
    panel(sample, crits, "B")
    one, two = annotators[:2]
    work.work_next(project=project, annotator=one)
    for criterion in crits:
        vote(project, one, sample, criterion, "B")
    assert Slot.objects.filter(sample=sample, completed_at__isnull=False).count() == 3
    assert Slot.objects.filter(sample=sample, annotator__isnull=True).count() == 2
    item = work.work_next(project=project, annotator=two)
    assert item.sample == other  # panel items mix with the rest; the verified one is done


@pytest.mark.django_db
def test_non_routable_or_audited_panel_labels_change_nothing(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators, stop=False, route=True)
    PanelLabel.objects.create(sample=sample, criterion=crits[0], choice="A", unanimous=True)
    assert routing.settled_items(project, [sample]) == set()
    panel(sample, crits[1:], "A")
    Vote.objects.create(  # a vote of someone holding no slot does not count
        sample=sample, criterion=crits[1], annotator=annotators[3], choice=Choice.A, rationale=GOOD
    )
    assert routing.settled_items(project, [sample]) == set()
    work.work_next(project=project, annotator=annotators[0])
    vote(project, annotators[0], sample, crits[1], "A")
    assert routing.settled_items(project, [sample]) == {(sample.pk, crits[1].pk)}
    project.audit_share = Decimal("1")
    assert routing.settled_items(project, [sample]) == set()


@pytest.mark.django_db
def test_annotators_never_see_the_panels_verdict(client, project, lead, annotators):
    """Blind: no labeling page names the panel, its judges or its choice."""
    from django.urls import reverse

    (sample,), crits = setup_project(project, lead, annotators, stop=False, route=True)
    PanelLabel.objects.bulk_create(
        [
            PanelLabel(
                sample=sample,
                criterion=c,
                choice="B",
                unanimous=True,
                consistent=True,
                routable=True,
                verdicts={"secret-judge-7": {"ab": "B", "ba": "B"}},
                judges=["secret-judge-7"],
            )
            for c in crits
        ]
    )
    one = annotators[0]
    client.force_login(one)
    first = client.get(reverse("label", args=[project.slug]))
    assert first.status_code == 200
    assert f'data-sample="{sample.pk}"'.encode() in first.content
    vote(project, one, sample, crits[0], "A")
    pages = [
        first,
        client.get(reverse("label", args=[project.slug]), HTTP_HX_REQUEST="true"),
        client.get(reverse("label-item", args=[project.slug, sample.pk, crits[0].pk])),
        client.get(reverse("label-back", args=[project.slug])),
        client.get(reverse("home")),
        client.get(reverse("project-detail", args=[project.slug])),
    ]
    for page in pages:
        body = page.content.decode()
        assert page.status_code in (200, 302)
        for secret in ("secret-judge-7", "routable", "verifier", "panel_", "Panel"):
            assert secret not in body, (page.wsgi_request.path, secret)


def test_no_annotator_facing_code_reads_the_panel():
    """The labeling views, their templates and services other than the queue never read it."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [
        *(root / "annotation" / "views").rglob("*.py"),
        *(root / "templates" / "annotation").rglob("*.html"),
        root / "annotation" / "services" / "work.py",
        root / "annotation" / "services" / "voting.py",
        root / "annotation" / "services" / "work_types.py",
    ]
    for path in files:
        text = path.read_text()
        assert "PanelLabel" not in text and "panel_label" not in text, path


@pytest.mark.django_db
def test_policy_settings_lock_once_formal_votes_exist(client, project, lead, annotators):
    from django.core.exceptions import ValidationError

    from annotation.services.project_settings import project_settings_update

    (sample,), crits = setup_project(project, lead, annotators, stop=False)
    project = project_settings_update(
        project=project, by=lead, audit_share=Decimal("0.3"), audit_seed=5
    )
    assert (project.audit_share, project.audit_seed) == (Decimal("0.3"), 5)
    one, two, three = annotators[:3]
    for user, choice in ((one, "A"), (two, "B")):
        work.work_next(project=project, annotator=user)
        vote(project, user, sample, crits[0], choice)
    for field, value in (
        ("audit_share", Decimal("0.5")),
        ("audit_seed", 6),
        ("routing_policy", RoutingPolicy.PANEL_VERIFIER),
    ):
        with pytest.raises(ValidationError) as refused:
            project_settings_update(project=project, by=lead, **{field: value})
        assert field in refused.value.message_dict
    project.refresh_from_db()
    assert (project.audit_share, project.audit_seed) == (Decimal("0.3"), 5)
    # Early stopping may be switched on at any time; the items it stops leave the queues.
    project = project_settings_update(
        project=project, by=lead, early_stopping=True, audit_share=Decimal("0.3")
    )
    assert project.early_stopping and not routing.sample_audited(project, sample)
    assert queue_of(project, three) == [c.key for c in crits[1:]]
    with pytest.raises(ValidationError) as refused:
        project_settings_update(project=project, by=lead, early_stopping=False)
    assert "early_stopping" in refused.value.message_dict
    # The settings page shows the fixed ones disabled, with the reason; a post cannot move them.
    client.force_login(lead)
    url = f"/projects/{project.slug}/settings/"
    page = client.get(url).content.decode()
    for name in ("routing_policy", "audit_share", "audit_seed"):
        (tag,) = re.findall(rf'<(?:select|input)[^>]*name="{name}"[^>]*>', page)
        assert " disabled" in tag, tag
    (tag,) = re.findall(r'<input[^>]*name="early_stopping"[^>]*>', page)
    assert " disabled" not in tag  # it can still be switched on (here: it is on)
    assert "Fixed: formal votes exist" in page


@pytest.mark.django_db
def test_the_settings_page_edits_the_policy(client, project, lead):
    client.force_login(lead)
    url = f"/projects/{project.slug}/settings/"
    page = client.get(url).content.decode()
    for name in ("early_stopping", "routing_policy", "audit_share", "audit_seed"):
        assert f'name="{name}"' in page
    data = {
        "name": project.name,
        "description": "",
        "annotators_per_sample": 3,
        "tie_cap": "0.1",
        "rationale_min_chars": project.rationale_min_chars,
        "lease_minutes": 60,
        "batch_size": 5,
        "work_order": "criterion_major",
        "vote_revision_window": "until_aggregation",
        "calibration_threshold": 80,
        "early_stopping": "on",
        "routing_policy": "panel_verifier",
        "audit_share": "0.25",
        "audit_seed": 42,
    }
    assert client.post(url, data).status_code == 302
    project.refresh_from_db()
    assert project.early_stopping and project.routing_policy == "panel_verifier"
    assert (project.audit_share, project.audit_seed) == (Decimal("0.250"), 42)
    bad = client.post(url, {**data, "audit_share": "1.5"})
    assert bad.status_code == 200 and "audit_share" in bad.context["form"].errors


@pytest.mark.django_db
def test_a_revision_that_makes_an_item_keepable_asks_the_third_vote_again(
    project, lead, annotators
):
    (sample,), crits = setup_project(project, lead, annotators)
    one, two, three = annotators[:3]
    for user in (one, two, three):
        work.work_next(project=project, annotator=user)
    for criterion in crits[1:]:
        vote(project, three, sample, criterion, "A")
    vote(project, one, sample, crits[0], "A")
    vote(project, two, sample, crits[0], "B")
    slot = Slot.objects.get(sample=sample, annotator=three)
    slot.refresh_from_db()
    assert slot.completed_at is not None
    assert counters_drift(project) == {}
    vote(project, one, sample, crits[0], "B")  # revised: B, B can still be kept
    slot.refresh_from_db()
    assert slot.completed_at is None
    assert counters_drift(project) == {}  # reopened: the holder's completed slot is taken back
    assert queue_of(project, three) == [crits[0].key]
    slot.refresh_from_db()
    assert slot.completed_at is not None


@pytest.mark.django_db
def test_a_late_disagreeing_verifier_reopens_the_settled_slots(project, lead, annotators):
    (sample,), crits = setup_project(project, lead, annotators, stop=False, route=True)
    panel(sample, crits, "A")
    one, two, three = annotators[:3]
    work.work_next(project=project, annotator=one)
    work.work_next(project=project, annotator=two)  # both were shown the item before a vote
    for criterion in crits[1:]:
        vote(project, one, sample, criterion, "A")
        vote(project, two, sample, criterion, "A")
    vote(project, one, sample, crits[0], "A")  # verified: the third slot settles
    assert Slot.objects.get(sample=sample, annotator__isnull=True).completed_at is not None
    assert Slot.objects.get(sample=sample, annotator=two).completed_at is not None
    vote(project, two, sample, crits[0], "B")  # a second verifier disagrees: overruled
    reopened = Slot.objects.get(sample=sample, annotator__isnull=True)
    assert reopened.completed_at is None
    assert counters_drift(project) == {}
    assert queue_of(project, three) == [crits[0].key]
    assert counters_drift(project) == {}


@pytest.mark.django_db
def test_switching_early_stopping_on_settles_the_open_slots(project, lead, annotators):
    from annotation.services.project_settings import project_settings_update

    project.batch_size = 3
    samples, crits = setup_project(project, lead, annotators, n=3, stop=False)
    project.batch_size = 3
    project.save()
    one, two, three = annotators[:3]
    for user, choice in ((one, "A"), (two, "B")):
        work.work_next(project=project, annotator=user)
        for sample in samples:
            for criterion in crits:
                vote(project, user, sample, criterion, choice)
    held = samples[0]
    Slot.objects.filter(sample=held, annotator__isnull=True).update(
        annotator=three,
        claimed_at=assignment.timezone.now(),
        lease_expires_at=assignment.timezone.now() + assignment.timedelta(hours=1),
    )
    assert Slot.objects.filter(sample__in=samples, completed_at__isnull=True).count() == 3
    project_settings_update(project=project, by=lead, early_stopping=True)
    assert not Slot.objects.filter(sample__in=samples, completed_at__isnull=True).exists()
    assert Slot.objects.get(sample=held, annotator=three).completed_at is not None
    assert work.work_next(project=project, annotator=three) is None
    assert counters_drift(project) == {}


@pytest.mark.django_db
def test_the_dashboard_counts_a_settled_sample_complete(project, lead, annotators):
    """Under routing a verified sample is complete with one annotator's votes, and the votes
    the last aggregation found unneeded are not counted as still needed."""
    from aggregation.selectors.dashboard import dashboard_figures
    from aggregation.services.aggregate import project_aggregate

    (sample, _other), crits = setup_project(project, lead, annotators, n=2, stop=False, route=True)
    panel(sample, crits, "B")
    work.work_next(project=project, annotator=annotators[0])
    for criterion in crits:
        vote(project, annotators[0], sample, criterion, "B")
    project_aggregate(project=project, n_boot=0)
    progress = {s["split"]: s for s in dashboard_figures(project=project).splits}
    open_ended = progress["open_ended"]
    assert (open_ended["samples"], open_ended["complete"]) == (2, 1)
    assert open_ended["votes_done"] == len(crits)
    # Two samples x 5 criteria x 3 votes, less the 2 x 5 the verified sample did not need.
    assert open_ended["votes_needed"] == 2 * len(crits) * 3 - 2 * len(crits)


@pytest.mark.django_db
def test_the_end_screen_counts_only_the_items_asked(client, project, lead, annotators):
    """An annotator whose queue ends with items early stopping settled sees them counted out."""
    (sample,), crits = setup_project(project, lead, annotators)
    one, two, three = annotators[:3]
    for user in (one, two, three):
        work.work_next(project=project, annotator=user)
    vote(project, one, sample, crits[0], "A")
    vote(project, two, sample, crits[0], "B")
    assert len(queue_of(project, three)) == len(crits) - 1
    state = work.work_state(project=project, annotator=three)
    assert (state.mode, state.done, state.total, state.not_asked) == (
        "done",
        len(crits) - 1,
        len(crits) - 1,
        1,
    )
    client.force_login(three)
    page = client.get(f"/projects/{project.slug}/label/").content.decode()
    assert "All done, thank you!" in page
    assert f"<strong>{len(crits) - 1}</strong> of {len(crits) - 1} votes" in page
    assert "1 item of your samples did not need your answer" in page
