"""The demo builder: exact counts, idempotent, and the invariants of the protocol hold."""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import Count

from aggregation.models import AgreementSnapshot, CriterionLabel
from annotation import tiecap
from annotation.models import Project, ReferenceLabel, Sample, Slot, Vote
from core.models import Job
from core.permissions import is_annotator, is_lead
from demo.build import (
    ANNOTATORS,
    COMPLETE,
    IN_PROGRESS,
    PARTIAL_CRITERIA,
    PASSWORD,
    demo_summary,
)
from demo.content import demo_samples

pytestmark = pytest.mark.django_db

EXPECTED = {
    "samples": 60,
    "seeds": 20,
    "slots": 40 * 3,
    "claimed_slots": COMPLETE * 3 + IN_PROGRESS * 2,
    "calibration_votes": 8 * 20 * 5,
    "formal_votes": COMPLETE * 3 * 5 + IN_PROGRESS * (5 + PARTIAL_CRITERIA),
    "members": 9,
    "calibrated": 8,
}


@pytest.fixture(scope="module")
def content():
    return demo_samples()


def test_content_has_both_splits_seeds_and_trade_offs(content):
    assert Counter((s.split, s.is_seed) for s in content) == {
        ("open_ended", True): 10,
        ("open_ended", False): 20,
        ("reasoning", True): 10,
        ("reasoning", False): 20,
    }
    # Every pair trades off: each response wins under at least one criterion.
    assert all(set(s.truth.values()) == {"A", "B"} for s in content)
    assert len({s.image for s in content}) >= 55
    wrong = [s for s in content if s.split == "reasoning" and not s.metadata["correct_b"]]
    assert wrong and all(s.reference_answer for s in content if s.split == "reasoning")


@pytest.mark.django_db(transaction=True)
def test_builder_counts_and_second_run_changes_nothing(capsys):
    # The command starts the aggregation job as the lead's button does; with no transaction
    # around it (as in `make demo`) the embedded default runs the job at once.
    call_command("demo_setup")
    out = capsys.readouterr().out
    assert f"lead / {PASSWORD}" in out
    # No address yet: demo_serve prints it once the server answers (tests/ops/test_demo_serve.py).
    assert "http://" not in out
    project = Project.objects.get(slug="demo")
    assert project.name == "Multi-Crit demo"
    assert demo_summary(project) == EXPECTED
    assert ReferenceLabel.objects.filter(sample__project=project).count() == 20 * 5
    first = list(Vote.objects.order_by("pk").values_list("pk", "choice", "rationale"))
    # The simulated votes are aggregated once, so the dashboard opens with figures.
    assert "aggregated the simulated votes" in out
    labels = list(CriterionLabel.objects.order_by("pk").values_list("pk", "outcome", "preference"))
    assert len(labels) > 0
    assert AgreementSnapshot.objects.filter(project=project).count() == 2
    job = Job.objects.get(project=project, kind="aggregate")
    assert job.status == "succeeded" and job.result["summary"] in out
    call_command("demo_setup")
    second = capsys.readouterr().out
    assert "60 unchanged" in second and "aggregated" not in second
    assert (
        list(CriterionLabel.objects.order_by("pk").values_list("pk", "outcome", "preference"))
        == labels
    )
    assert demo_summary(project) == EXPECTED
    assert list(Vote.objects.order_by("pk").values_list("pk", "choice", "rationale")) == first
    assert User.objects.count() == 10


def test_accounts_calibration_state_and_invariants():
    call_command("demo_setup", verbosity=0)
    lead = User.objects.get(username="lead")
    assert is_lead(lead) and lead.check_password(PASSWORD)
    for username in ANNOTATORS:
        user = User.objects.get(username=username)
        assert is_annotator(user) and user.check_password(PASSWORD)
    project = Project.objects.get(slug="demo")
    ann1 = project.members.get(user__username="ann1")
    assert not ann1.is_calibrated
    assert not Vote.objects.filter(annotator__username="ann1").exists()
    assert not Slot.objects.filter(annotator__username="ann1").exists()
    assert all(m.is_calibrated for m in project.members.exclude(user__username="ann1"))

    # No slot over the cap, seeds have none, one slot per annotator per sample.
    per_sample = Slot.objects.values("sample").annotate(n=Count("pk"))
    assert {row["n"] for row in per_sample} == {3}
    assert not Slot.objects.filter(sample__is_seed=True).exists()
    claimed = Slot.objects.filter(annotator__isnull=False).values_list("sample", "annotator")
    assert len(claimed) == len(set(claimed))
    # Formal votes only from the annotator holding a slot of that sample, only on formal samples.
    holders = set(claimed)
    formal = Vote.objects.filter(round=0)
    assert all((v.sample_id, v.annotator_id) in holders for v in formal)
    assert not formal.filter(sample__is_seed=True).exists()
    assert not Vote.objects.filter(round__gte=1, sample__is_seed=False).exists()
    # A completed slot has a vote on every criterion of its split.
    for slot in Slot.objects.filter(completed_at__isnull=False):
        assert formal.filter(sample=slot.sample, annotator=slot.annotator).count() == 5
    # Every tie, replayed in the order cast, is one the voting service would accept.
    cast: dict[int, tuple[int, int]] = {}
    for annotator, choice in formal.order_by("pk").values_list("annotator", "choice"):
        n, t = cast.get(annotator, (0, 0))
        if choice == "tie":
            assert tiecap.new_tie_allowed(ties=t, votes=n, cap=project.tie_cap)
        cast[annotator] = (n + 1, t + (choice == "tie"))
    assert sum(t for _, t in cast.values()) > 0
    assert all(tiecap.within_cap(ties=t, votes=n, cap=project.tie_cap) for n, t in cast.values())
    # Mostly agreeing, with some splits: per (sample, criterion) with 3 votes.
    triples = Counter()
    for choices in _grouped(formal).values():
        if len(choices) == 3:
            triples["unanimous" if len(set(choices)) == 1 else "split"] += 1
    assert triples["unanimous"] > triples["split"] > 0
    assert Sample.objects.filter(project=project, slots__annotator__isnull=True).exists()


def _grouped(votes) -> dict[tuple[int, int], list[str]]:
    grouped: dict[tuple[int, int], list[str]] = {}
    for sample, criterion, choice in votes.values_list("sample", "criterion", "choice"):
        grouped.setdefault((sample, criterion), []).append(choice)
    return grouped
