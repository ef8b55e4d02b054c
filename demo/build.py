"""The demo builder: a project, its accounts, the samples (through the import) and simulated work.

Idempotent: the samples come through :func:`samples_import` (unchanged samples are skipped),
accounts and memberships are get-or-create, and the simulated votes are written only when the
project has none yet.
"""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone

from annotation import tiecap
from annotation.importing.service import ImportReport, samples_import
from annotation.models import Criterion, Project, ProjectMember, Sample, Slot, Vote
from annotation.services.counters import counters_recount
from annotation.services.projects import member_add, project_get_or_create, roles_ensure
from core.permissions import LEAD_GROUP

from .content import DemoSample, demo_samples

SLUG = "demo"
NAME = "Multi-Crit demo"
PASSWORD = "multicrit-demo"
LEAD = "lead"
ANNOTATORS = [f"ann{i}" for i in range(1, 10)]
UNCALIBRATED = "ann1"
# Formal samples, in order: the first ones are fully labeled by 3 annotators, the next ones are
# in progress (one slot done, one half done, one open), the rest are untouched.
COMPLETE = 28
IN_PROGRESS = 6
PARTIAL_CRITERIA = 2
TIE_RATE = 0.04

RATIONALES = {
    "completeness": (
        "{w} answers every part of the question and covers the main elements; {l} skips some.",
        "{w} mentions all the items that matter, {l} leaves out part of the picture.",
    ),
    "visual-grounding": (
        "{w} gives specific details I can check in the image (values, counts, colours).",
        "{w} points to concrete things in the picture; {l} stays generic.",
    ),
    "hallucination": (
        "{l} states something that is not in the image; {w} sticks to what is shown.",
        "{w} has no invented details, {l} gets a value or object wrong.",
    ),
    "expressiveness": (
        "{w} reads better and adds some real interpretation, {l} is flat.",
        "{w} has the more engaging, expert wording.",
    ),
    "clarity": (
        "{w} is easier to follow; {l} repeats itself and rambles.",
        "{w} is well organised and to the point.",
    ),
    "grounding": (
        "{w} reads the numbers in the figure correctly; {l} misreads one.",
        "{w} uses the values given in the drawing.",
    ),
    "logic": (
        "The steps in {w} follow from each other without gaps.",
        "{w} is consistent from start to end; {l} has a step that does not hold.",
    ),
    "exploration": (
        "{w} checks its result and considers an alternative approach.",
        "{w} verifies the answer, {l} just states it.",
    ),
    "efficiency": (
        "{w} gets there in fewer steps with no padding.",
        "{w} is concise; {l} spends words on things that are not needed.",
    ),
}
TIE_RATIONALE = "Both responses are about equally good on this criterion; nothing separates them."


@dataclass
class DemoResult:
    project: Project
    imported: ImportReport
    users_created: int
    votes_created: int

    def lines(self) -> list[str]:
        return [
            # The address is printed by demo_serve once the server answers on its port.
            f"{NAME} is set up (project page: /projects/{SLUG}/)",
            f"  samples: {self.imported.summary()}",
            f"  accounts created now: {self.users_created}; simulated votes written now: "
            f"{self.votes_created}",
            f"  lead:        {LEAD} / {PASSWORD}",
            f"  annotators:  {', '.join(ANNOTATORS)} / {PASSWORD}",
            f"  {UNCALIBRATED} has not done the calibration round yet: log in as {UNCALIBRATED} "
            "to try it; the others are calibrated and have formal work in progress.",
        ]


def _write_files(directory: Path, samples: list[DemoSample]) -> Path:
    (directory / "images").mkdir()
    path = directory / "demo.jsonl"
    with open(path, "w") as handle:
        for sample in samples:
            image_path = f"images/{sample.external_id}.png"
            (directory / image_path).write_bytes(sample.image)
            handle.write(json.dumps(sample.jsonl(image_path), ensure_ascii=False) + "\n")
    return path


def _accounts() -> tuple[User, list[User], int]:
    roles_ensure()
    created = 0
    lead, new = User.objects.get_or_create(
        username=LEAD, defaults={"first_name": "Lea", "last_name": "Lead"}
    )
    created += new
    if new:
        lead.set_password(PASSWORD)
        lead.save()
    lead.groups.add(Group.objects.get(name=LEAD_GROUP))
    annotators = []
    for username in ANNOTATORS:
        user, new = User.objects.get_or_create(username=username)
        created += new
        if new:  # an account whose password someone changed keeps it
            user.set_password(PASSWORD)
            user.save()
        annotators.append(user)
    return lead, annotators, created


def _choice(rng: random.Random, truth: str, skill: float, tie_rate: float) -> str:
    roll = rng.random()
    if roll < tie_rate:
        return "tie"
    if roll < tie_rate + skill * (1 - tie_rate):
        return truth
    return "B" if truth == "A" else "A"


def _rationale(rng: random.Random, key: str, choice: str) -> str:
    if choice == "tie":
        return TIE_RATIONALE
    loser = "B" if choice == "A" else "A"
    return rng.choice(RATIONALES[key]).format(w=f"Response {choice}", l=f"Response {loser}")


def _cap_ties(votes: list[Vote], truths: dict[int, str], cap: Decimal) -> None:
    """Replay the votes in order; each tie the service would refuse becomes the careful answer."""
    counts: dict[int, tuple[int, int]] = {}
    for vote in votes:
        n, t = counts.get(vote.annotator_id, (0, 0))
        if vote.choice == "tie" and not tiecap.new_tie_allowed(ties=t, votes=n, cap=cap):
            vote.choice = truths[id(vote)]
            vote.rationale = RATIONALES[vote.criterion.key][0].format(
                w=f"Response {vote.choice}", l="the other response"
            )
        counts[vote.annotator_id] = (n + 1, t + (vote.choice == "tie"))


def _simulate(project: Project, samples: list[DemoSample], lead: User, annotators: list[User]):
    rng = random.Random("multicrit-demo-votes")
    now = timezone.now()
    criteria = {
        split: list(Criterion.objects.filter(project=project, split=split).order_by("order"))
        for split in ("open_ended", "reasoning")
    }
    by_id = {s.external_id: s for s in samples}
    db_samples = {s.external_id: s for s in Sample.objects.filter(project=project)}
    calibrated = [u for u in annotators if u.username != UNCALIBRATED]
    skill = {u.pk: rng.uniform(0.78, 0.93) for u in calibrated}
    votes: list[Vote] = []
    truths: dict[int, str] = {}

    def vote(sample: Sample, criterion: Criterion, user: User, round_: int, tie_rate: float):
        truth = by_id[sample.external_id].truth[criterion.key]
        choice = _choice(rng, truth, skill[user.pk], tie_rate)
        item = Vote(
            sample=sample,
            criterion=criterion,
            annotator=user,
            round=round_,
            choice=choice,
            rationale=_rationale(rng, criterion.key, choice),
            seconds=round(rng.uniform(20, 150), 1),
        )
        truths[id(item)] = truth
        votes.append(item)

    # Calibration round 1: every calibrated annotator labels every seed under every criterion.
    seeds = [db_samples[s.external_id] for s in samples if s.is_seed]
    for user in calibrated:
        for sample in seeds:
            for criterion in criteria[sample.split]:
                vote(sample, criterion, user, 1, TIE_RATE)
    ProjectMember.objects.filter(project=project, user__in=calibrated).update(
        calibration_round=1, calibrated_at=now - timedelta(days=1), calibrated_by=lead
    )

    # Formal work: interleave the splits so both progress together.
    formal_oe = [
        db_samples[s.external_id] for s in samples if not s.is_seed and s.split == "open_ended"
    ]
    formal_rs = [
        db_samples[s.external_id] for s in samples if not s.is_seed and s.split == "reasoning"
    ]
    formal = [s for pair in zip(formal_oe, formal_rs, strict=True) for s in pair]
    slots = {(s.sample_id, s.index): s for s in Slot.objects.filter(sample__in=formal)}
    formal_votes_from = len(votes)
    lease = timedelta(minutes=project.lease_minutes)
    for i, sample in enumerate(formal[: COMPLETE + IN_PROGRESS]):
        holders = [calibrated[(3 * i + j) % len(calibrated)] for j in range(3)]
        in_progress = i >= COMPLETE
        for index, user in enumerate(holders, start=1):
            slot = slots[(sample.pk, index)]
            if in_progress and index == 3:
                continue  # still open
            done = not (in_progress and index == 2)
            slot.annotator = user
            slot.claimed_at = now - timedelta(hours=rng.uniform(1, 30))
            slot.lease_expires_at = now + lease if not done else slot.claimed_at + lease
            slot.completed_at = (
                slot.claimed_at + timedelta(minutes=rng.uniform(5, 40)) if done else None
            )
            keys = criteria[sample.split] if done else criteria[sample.split][:PARTIAL_CRITERIA]
            for criterion in keys:
                vote(sample, criterion, user, Vote.FORMAL_ROUND, TIE_RATE)
    _cap_ties(votes[formal_votes_from:], truths, project.tie_cap)
    Slot.objects.bulk_update(
        [s for s in slots.values() if s.annotator_id is not None],
        ["annotator", "claimed_at", "lease_expires_at", "completed_at"],
    )
    Vote.objects.bulk_create(votes, batch_size=1000)
    counters_recount(project_id=project.pk)  # written in bulk, so counted once at the end
    return len(votes)


def demo_build() -> DemoResult:
    """Create or refresh the demo project; safe to run any number of times."""
    samples = demo_samples()
    project, _ = project_get_or_create(slug=SLUG, name=NAME)
    if not project.description:
        project.description = (
            "A small study to explore the platform: 60 drawn charts, figures and scenes, "
            "30 open-ended and 30 reasoning pairs, 20 of them seeds for calibration."
        )
        project.save(update_fields=["description"])
    with tempfile.TemporaryDirectory(prefix="multicrit-demo-") as tmp:
        imported = samples_import(
            project=project, path=_write_files(Path(tmp), samples), update=True
        )
    lead, annotators, users_created = _accounts()
    with transaction.atomic():
        for user in annotators:
            member_add(project=project, user=user)
        votes = 0
        if not Vote.objects.filter(sample__project=project).exists():
            votes = _simulate(project, samples, lead, annotators)
    return DemoResult(
        project=project, imported=imported, users_created=users_created, votes_created=votes
    )


def demo_summary(project: Project) -> dict[str, Any]:
    """Counts a test or a curious user can compare between runs."""
    return {
        "samples": Sample.objects.filter(project=project).count(),
        "seeds": Sample.objects.filter(project=project, is_seed=True).count(),
        "slots": Slot.objects.filter(sample__project=project).count(),
        "claimed_slots": Slot.objects.filter(
            sample__project=project, annotator__isnull=False
        ).count(),
        "calibration_votes": Vote.objects.filter(sample__project=project, round__gte=1).count(),
        "formal_votes": Vote.objects.filter(sample__project=project, round=0).count(),
        "members": ProjectMember.objects.filter(project=project, is_active=True).count(),
        "calibrated": ProjectMember.objects.filter(
            project=project, calibrated_at__isnull=False
        ).count(),
    }
