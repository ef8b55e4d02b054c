"""Concurrent annotators on PostgreSQL with early stopping and routing on: the claim invariants."""

from __future__ import annotations

import hashlib
import traceback
from collections import Counter
from decimal import Decimal

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import connection

from annotation import routing as rule
from annotation.models import Criterion, PanelLabel, Project, RoutingPolicy, Sample, Slot, Vote
from annotation.services import routing, voting, work

from .race import RATIONALE, race_setup
from .test_concurrency import needs_postgres, run_threads

RACERS = 16
SAMPLES = 10


def choice_of(user_id: int, sample_id: int, criterion_id: int) -> str:
    """Each annotator's fixed answer, mostly A so that both stops and verifications happen."""
    digest = hashlib.blake2s(f"{user_id}:{sample_id}:{criterion_id}".encode()).digest()
    return "B" if digest[0] < 80 else "A"


def racer(project_id: int, user_id: int) -> dict:
    acked, error = [], None
    try:
        project = Project.objects.get(pk=project_id)
        user = User.objects.get(pk=user_id)
        for _ in range(500):
            item = work.work_next(project=project, annotator=user)
            if item is None:
                break
            vote = voting.vote_submit(
                project=project,
                annotator=user,
                sample_id=item.sample.pk,
                criterion_id=item.criterion.pk,
                shown_choice=choice_of(user_id, item.sample.pk, item.criterion.pk),
                rationale=RATIONALE,
                seconds=1.0,
            )
            acked.append((vote.sample_id, vote.criterion_id, user_id))
    except Exception:
        error = traceback.format_exc()
    finally:
        connection.close()
    return {"acked": acked, "error": error}


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_annotators_keep_the_invariants_under_stopping_and_routing():
    setup = race_setup(racers=RACERS, samples=SAMPLES, batch_size=2)
    project = Project.objects.get(pk=setup["project_id"])
    project.shuffle_ab = False
    project.early_stopping = True
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.audit_share = Decimal("0.3")
    project.save()
    samples = list(Sample.objects.filter(project=project).order_by("id"))
    criteria = list(Criterion.objects.filter(project=project, split="open_ended"))
    PanelLabel.objects.bulk_create(
        [
            PanelLabel(
                sample=s, criterion=c, choice="A", unanimous=True, consistent=True, routable=True
            )
            for s in samples[::2]
            for c in criteria
        ]
    )
    results = run_threads(racer, [(project.pk, uid) for uid in setup["user_ids"]])
    assert [r["error"] for r in results if r["error"]] == []

    k = project.annotators_per_sample
    slots = list(
        Slot.objects.filter(sample__project=project).values_list("sample_id", "annotator_id")
    )
    assert set(Counter(s for s, _ in slots).values()) == {k}
    held = [(s, a) for s, a in slots if a is not None]
    assert len(held) == len(set(held)), "an annotator holds two slots of one sample"
    assert not Slot.objects.filter(sample__project=project, completed_at__isnull=True).exists()
    votes = list(
        Vote.objects.filter(sample__project=project).values_list(
            "sample_id", "criterion_id", "annotator_id", "choice"
        )
    )
    acked = sorted(a for r in results for a in r["acked"])
    assert acked == sorted(v[:3] for v in votes)
    assert all((s, a) in set(held) for s, _, a, _ in votes), "a vote without a slot"
    per_item = Counter((s, c) for s, c, _, _ in votes)
    assert max(per_item.values()) <= k
    voters = Counter(s for s, _ in {(s, a) for s, _, a, _ in votes})
    assert max(voters.values()) <= k

    # Every item ended either with k votes or with a reason not to ask more.
    audited = {s.pk for s in samples if routing.sample_audited(project, s)}
    routed = {s.pk for s in samples[::2]} - audited
    assert audited and routed
    saved = 0
    for sample in samples:
        for criterion in criteria:
            cast = [v[3] for v in votes if v[:2] == (sample.pk, criterion.pk)]
            a, b, t = (np.array([cast.count(x)]) for x in ("A", "B", "tie"))
            if sample.pk in audited:
                assert len(cast) == k
                continue
            panel = rule.PANEL_A if sample.pk in routed else rule.PANEL_NONE
            asked = rule.asks_vote(a, b, t, k, stop=np.array([True]), panel=np.array([panel]))
            assert len(cast) == k or not asked[0], (sample.pk, criterion.pk, cast)
            saved += k - len(cast)
    assert saved > 0


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_two_votes_committed_at_once_still_settle_the_waiting_slot():
    """A and B cast at the same moment: whichever commits last sees both and settles."""
    rounds = 6
    setup = race_setup(racers=3, samples=rounds, batch_size=rounds)
    project = Project.objects.get(pk=setup["project_id"])
    project.shuffle_ab = False
    project.early_stopping = True
    project.audit_share = Decimal("0")
    project.save()
    one, two, three = (User.objects.get(pk=pk) for pk in setup["user_ids"])
    for user in (one, two, three):
        work.work_next(project=project, annotator=user)
    samples = list(Sample.objects.filter(project=project).order_by("id"))
    first, *rest = list(Criterion.objects.filter(project=project, split="open_ended"))
    for sample in samples:
        for criterion in rest:
            voting.vote_submit(
                project=project,
                annotator=three,
                sample_id=sample.pk,
                criterion_id=criterion.pk,
                shown_choice="A",
                rationale=RATIONALE,
                seconds=1,
            )

    def cast(user, sample_id, choice):
        try:
            voting.vote_submit(
                project=Project.objects.get(pk=project.pk),
                annotator=user,
                sample_id=sample_id,
                criterion_id=first.pk,
                shown_choice=choice,
                rationale=RATIONALE,
                seconds=1,
            )
            return "ok"
        finally:
            connection.close()

    for sample in samples:
        assert run_threads(cast, [(one, sample.pk, "A"), (two, sample.pk, "B")]) == ["ok", "ok"]
    waiting = Slot.objects.filter(sample__in=samples, annotator=three)
    assert waiting.count() == rounds
    assert not waiting.filter(completed_at__isnull=True).exists()
    assert work.work_next(project=project, annotator=three) is None
