"""Annotator pseudonyms: the one rule for every place that shows annotators without names.

An annotator is ``annotator_01``, ``annotator_02``, ... by the order in which they joined the
project (membership order, removed members included, so a name never moves). Anyone with votes
but no membership (data made outside the app) is named after the members, in order of first
appearance. Dataset files, manifests and the calibration discussion all use this rule; the
names say nothing about accounts or usernames.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .ab import CHOICE_NAMES
from .models import Project, ProjectMember


def pseudonym(position: int) -> str:
    """The pseudonym of the ``position``-th annotator (1-based)."""
    return f"annotator_{position:02d}"


def pseudonym_position(name: str) -> int:
    """The position a pseudonym stands for (for sorting by it)."""
    return int(name.rsplit("_", 1)[1])


#: What a graded or pointwise vote adds to its exported record.
SCALE_VOTE_FIELDS: dict[str, tuple[str, ...]] = {
    "graded": ("grade",),
    "pointwise": ("score_a", "score_b"),
}


class Pseudonyms:
    """Names for user ids: the known ones first (members), then anyone else as they appear."""

    def __init__(self, members: Iterable[int] = ()) -> None:
        self._names: dict[int, str] = {}
        for user_id in members:
            if user_id not in self._names:
                self._names[user_id] = pseudonym(len(self._names) + 1)
        self._used: set[int] = set()

    def name(self, annotator_id: int) -> str:
        """The annotator's pseudonym (a new one for an id never seen)."""
        if annotator_id not in self._names:
            self._names[annotator_id] = pseudonym(len(self._names) + 1)
        self._used.add(annotator_id)
        return self._names[annotator_id]

    def __len__(self) -> int:
        """How many annotators were named so far (not how many are known)."""
        return len(self._used)

    def votes(
        self, votes: Iterable[Mapping[str, Any]], *, scale: str = "pairwise"
    ) -> list[dict[str, Any]]:
        """Pseudonymise ``{"annotator_id", "choice", "rationale", "unsure"}`` records by name.

        ``unsure`` is the annotator's "not sure" flag (False when the record has none). A
        graded ``scale`` adds each vote's ``grade``, a pointwise one ``score_a`` and ``score_b``.
        """
        ordered = sorted(votes, key=lambda v: (v["annotator_id"], v.get("id", 0)))
        extra = SCALE_VOTE_FIELDS.get(scale, ())
        out = [
            {
                "annotator": self.name(int(v["annotator_id"])),
                "choice": CHOICE_NAMES.get(v["choice"], v["choice"]),
                "rationale": v["rationale"],
                "unsure": bool(v.get("unsure", False)),
                **{name: v.get(name) for name in extra},
            }
            for v in ordered
        ]
        return sorted(out, key=lambda v: pseudonym_position(v["annotator"]))


def project_pseudonyms(*, project: Project) -> Pseudonyms:
    """The project's pseudonyms, by membership order (one query)."""
    members = (
        ProjectMember.objects.filter(project=project)
        .order_by("pk")
        .values_list("user_id", flat=True)
    )
    return Pseudonyms(list(members))
