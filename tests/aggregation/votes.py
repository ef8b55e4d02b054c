"""Votes created directly in the database, for the aggregation tests."""

from __future__ import annotations

from annotation.models import Criterion, Project, Sample, Vote


def criteria_of(project: Project, split: str = "open_ended") -> list[Criterion]:
    return list(Criterion.objects.filter(project=project, split=split).order_by("order", "key"))


def cast(sample: Sample, criterion: Criterion, annotator, choice: str, *, round: int = 0) -> Vote:
    return Vote.objects.create(
        sample=sample,
        criterion=criterion,
        annotator=annotator,
        round=round,
        choice=choice,
        rationale=f"{annotator.username} reads {criterion.key} as {choice}.",
        seconds=12.0,
    )


def cast_all(sample: Sample, criterion: Criterion, annotators, choices: str) -> list[Vote]:
    """``choices`` like "AAt" (t = tie), one letter per annotator."""
    names = {"A": "A", "B": "B", "t": "tie"}
    return [cast(sample, criterion, a, names[c]) for a, c in zip(annotators, choices, strict=False)]
