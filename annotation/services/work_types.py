"""Values exchanged between the work services and the labeling screens."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Criterion, Sample, Vote


class VoteRejected(Exception):
    """A vote the server refuses; ``field`` names the control the message belongs next to."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class WorkItem:
    """One (sample, criterion) screen for one annotator."""

    sample: Sample
    criterion: Criterion
    round: int  # 0 = formal, >= 1 = calibration round
    swapped: bool  # True: sample.response_b is shown on the left as "A"
    done: int  # votes cast in this phase
    total: int  # items assigned in this phase
    ties_available: int | None  # None during calibration (ties are not capped there)
    vote: Vote | None  # the existing vote when revisiting, else None
    tie_wait: int | None = None  # formal votes before a tie is allowed (0: now, None: never)
    skipped: bool = False  # the annotator skipped this item before; it is served again now
    returning: bool = False  # the annotator already voted on this sample under another criterion

    @property
    def is_calibration(self) -> bool:
        return self.round != Vote.FORMAL_ROUND


@dataclass(frozen=True)
class WorkState:
    """Where an annotator stands in a project: which phase, and how far along."""

    mode: str  # "calibration" | "awaiting_review" | "formal" | "done" | "not_member"
    done: int
    total: int
    ties_available: int | None
    calibration_round: int
    # Done under early stopping or routing: the items of the annotator's samples never asked
    # because their labels were settled without them (counted out of ``total``).
    not_asked: int = 0
