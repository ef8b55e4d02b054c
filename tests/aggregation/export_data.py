"""Data for the export tests: samples with real images, votes and aggregated labels."""

from __future__ import annotations

import io

from django.core.files.base import ContentFile
from django.utils import timezone
from PIL import Image

from aggregation.models import CriterionLabel, Outcome
from annotation.models import Criterion, Project, Sample, Vote
from tests.conftest import make_sample


def png_bytes(color: tuple[int, int, int], size: tuple[int, int] = (12, 8)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def sample_with_image(project: Project, external_id: str, *, color=(200, 30, 30), **fields):
    sample = make_sample(project, external_id, **fields)
    sample.image.save(f"{external_id}.png", ContentFile(png_bytes(color)), save=True)
    return sample


def criteria(project: Project, split: str = "open_ended") -> list[Criterion]:
    return list(Criterion.objects.filter(project=project, split=split).order_by("order"))


def label_with_votes(
    sample: Sample,
    criterion: Criterion,
    annotators,
    choices: str,
    *,
    outcome: str | None = None,
) -> CriterionLabel:
    """Votes ``choices`` (e.g. "AAt": A, A, tie) by ``annotators`` and the label they give."""
    names = {"A": "A", "B": "B", "t": "tie"}
    votes = [
        Vote.objects.create(
            sample=sample,
            criterion=criterion,
            annotator=user,
            choice=names[c],
            rationale=f"{user.username} reasons about {criterion.key} on {sample.external_id}.",
        )
        for user, c in zip(annotators, choices, strict=False)
    ]
    a, b, t = choices.count("A"), choices.count("B"), choices.count("t")
    if outcome is None:
        if len(choices) < 3:
            outcome = Outcome.DROPPED_MISSING
        elif a and b:
            outcome = Outcome.DROPPED_SPLIT
        elif t >= 2:
            outcome = Outcome.DROPPED_TIES
        else:
            outcome = Outcome.KEPT_UNANIMOUS if t == 0 else Outcome.KEPT_MAJORITY_TIE
    preference = ("A" if a > b else "B") if outcome in Outcome.kept() else ""
    return CriterionLabel.objects.create(
        sample=sample,
        criterion=criterion,
        outcome=outcome,
        preference=preference,
        votes_a=a,
        votes_b=b,
        votes_tie=t,
        vote_ids=[v.pk for v in votes],
        computed_at=timezone.now(),
    )


def small_dataset(project: Project, annotators) -> dict:
    """Two open-ended and one reasoning sample, a seed, a dropped label; one conflict."""
    oe = criteria(project, "open_ended")
    rs = criteria(project, "reasoning")
    trio = annotators[:3]
    s1 = sample_with_image(project, "p1", color=(255, 0, 0))
    s2 = sample_with_image(project, "p2", color=(0, 255, 0), model_a="m-2a", model_b="m-2b")
    s3 = sample_with_image(project, "r1", color=(0, 0, 255), split="reasoning")
    seed = sample_with_image(project, "seed1", color=(9, 9, 9), is_seed=True)
    labels = {
        "p1_0": label_with_votes(s1, oe[0], trio, "AAA"),
        "p1_1": label_with_votes(s1, oe[1], trio, "BBt"),  # conflict with p1_0
        "p1_2": label_with_votes(s1, oe[2], trio, "ABt"),  # dropped
        "p2_0": label_with_votes(s2, oe[0], annotators[3:6], "BBB"),
        "r1_0": label_with_votes(s3, rs[0], trio, "AAt"),
        "seed_0": label_with_votes(seed, oe[0], trio, "AAA"),
    }
    return {
        "samples": {"p1": s1, "p2": s2, "r1": s3, "seed": seed},
        "labels": labels,
        "oe": oe,
        "rs": rs,
    }
