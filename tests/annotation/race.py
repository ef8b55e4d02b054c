"""A claim-and-vote race shared by the PostgreSQL and SQLite concurrency tests.

``race_setup`` builds a project with fewer open slots than the racers want; ``racer`` is one
annotator working until nothing is left; ``race_check`` verifies the invariants afterwards.
Usable from pytest (PostgreSQL threads) and from the SQLite driver script (processes).
"""

from __future__ import annotations

import traceback
from collections import Counter
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from annotation.models import Project, ProjectMember, Slot, Vote
from annotation.services import voting, work
from annotation.services.counters import counters_recount
from annotation.services.projects import project_create
from tests.annotation.work_data import make_formal

RATIONALE = "Raced rationale, long enough."


def race_setup(*, racers: int, samples: int, batch_size: int = 2, k: int = 3) -> dict[str, Any]:
    """A project whose k * samples slots are fewer than the racers' batches ask for."""
    project = project_create(
        name="Race", slug=f"race-{timezone.now():%H%M%S%f}", batch_size=batch_size
    )
    project.annotators_per_sample = k
    project.save()
    make_formal(project, samples, prefix="r")
    now = timezone.now()
    User.objects.bulk_create([User(username=f"{project.slug}-u{i:03d}") for i in range(racers)])
    users = list(User.objects.filter(username__startswith=f"{project.slug}-u").order_by("id"))
    ProjectMember.objects.bulk_create(
        [ProjectMember(project=project, user=u, calibrated_at=now) for u in users]
    )
    return {"project_id": project.pk, "user_ids": [u.pk for u in users]}


def racer(project_id: int, user_id: int, *, close: bool = True) -> dict[str, Any]:
    """Claim and vote until nothing is left; return acknowledged votes and any error."""
    acked: list[tuple[int, int, int]] = []
    error = None
    try:
        project = Project.objects.get(pk=project_id)
        user = User.objects.get(pk=user_id)
        for _ in range(1000):
            item = work.work_next(project=project, annotator=user)
            if item is None:
                break
            vote = voting.vote_submit(
                project=project,
                annotator=user,
                sample_id=item.sample.pk,
                criterion_id=item.criterion.pk,
                shown_choice="A",
                rationale=RATIONALE,
                seconds=1.0,
            )
            acked.append((vote.sample_id, vote.criterion_id, user_id))
    except Exception:  # reported to the test, which fails on any error
        error = traceback.format_exc()
    finally:
        if close:
            connection.close()
    return {"acked": acked, "error": error}


def race_check(project_id: int, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The invariants after a race; returns figures and a list of violations."""
    project = Project.objects.get(pk=project_id)
    k = project.annotators_per_sample
    problems = [r["error"] for r in results if r["error"]]
    slots = list(
        Slot.objects.filter(sample__project=project).values_list("sample_id", "annotator_id")
    )
    rows_per_sample = Counter(s for s, _ in slots)
    if any(n != k for n in rows_per_sample.values()):
        problems.append(f"slot rows per sample differ from k: {rows_per_sample}")
    held = [(s, a) for s, a in slots if a is not None]
    if len(held) != len(set(held)):
        problems.append("an annotator holds two slots of one sample")
    votes = list(
        Vote.objects.filter(sample__project=project, round=Vote.FORMAL_ROUND).values_list(
            "sample_id", "criterion_id", "annotator_id"
        )
    )
    voters = {}
    for sample_id, _, annotator_id in votes:
        voters.setdefault(sample_id, set()).add(annotator_id)
    over = {s: len(v) for s, v in voters.items() if len(v) > k}
    if over:
        problems.append(f"samples voted by more than k annotators: {over}")
    acked = [tuple(v) for r in results for v in r["acked"]]
    if len(acked) != len(set(acked)):
        problems.append("a vote was acknowledged twice")
    if sorted(acked) != sorted(votes):
        problems.append(f"acknowledged {len(acked)} votes but {len(votes)} stored")
    drift = counters_drift(project)
    if drift:
        problems.append(f"member counters differ from a recount: {drift}")
    n_criteria = project.criteria.filter(split="open_ended").count()
    complete = sum(1 for v in voters.values() if len(v) == k)
    return {
        "problems": problems,
        "votes": len(votes),
        "acked": len(acked),
        "samples_complete": complete,
        "expected_votes": len(rows_per_sample) * k * n_criteria,
    }


COUNTERS = ("formal_votes", "formal_ties", "done_votes", "done_open_ended", "done_reasoning")


def counters_drift(project: Project) -> dict[int, tuple]:
    """Members whose stored counters differ from a recount: {user id: (stored, recounted)}."""
    members = ProjectMember.objects.filter(project=project).order_by("user_id")
    stored = {m["user_id"]: tuple(m[c] for c in COUNTERS) for m in members.values()}
    counters_recount(project_id=project.pk)
    again = {m["user_id"]: tuple(m[c] for c in COUNTERS) for m in members.values()}
    return {u: (stored[u], again[u]) for u in stored if stored[u] != again[u]}
