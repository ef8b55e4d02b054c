"""Reads for the calibration discussion: every seed item with the reference and all votes.

Each annotator is shown with their latest calibration vote per seed item (the current round's when
they cast one, otherwise the round before), so a lead who sends someone into another round still
sees what they answered last. The whole discussion takes a fixed number of queries.

Who is named: the lead sees usernames; an annotator sees every peer by pseudonym
(:mod:`annotation.pseudonyms`, the same rule as the dataset files) and their own entries as
"you", listed in pseudonym order so that not even the order follows the usernames.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from core.permissions import is_lead

from .. import scales
from ..models import Criterion, Project, ProjectMember, ReferenceLabel, Sample, Vote
from ..pseudonyms import project_pseudonyms, pseudonym_position

YOU = "you"


@dataclass(frozen=True)
class VoteRow:
    member: ProjectMember
    choice: str | None  # canonical "A" | "B" | "tie"; None when the annotator has not voted
    rationale: str
    round: int | None
    agrees: bool | None  # None without a vote or without a reference
    name: str = ""  # as the viewer may see it: username (lead), pseudonym or "you"
    answer: str = ""  # graded / pointwise: the grade or scores as read ("A>B", "A 4 · B 2")

    @property
    def is_earlier_round(self) -> bool:
        return self.round is not None and self.round < self.member.calibration_round


@dataclass(frozen=True)
class DiscussionItem:
    sample: Sample
    criterion: Criterion
    reference: ReferenceLabel | None
    rows: list[VoteRow]

    @property
    def disagreement(self) -> bool:
        """Annotators split among themselves, or someone differs from the reference."""
        choices = {row.choice for row in self.rows if row.choice is not None}
        if self.reference is not None and choices - {self.reference.preference}:
            return True
        return len(choices) > 1


@dataclass(frozen=True)
class DiscussionSample:
    sample: Sample
    items: list[DiscussionItem]


@dataclass(frozen=True)
class CriterionAgreement:
    criterion: Criterion
    agree: int
    compared: int

    @property
    def percent(self) -> int | None:
        return round(100 * self.agree / self.compared) if self.compared else None


def below_threshold(*, agree: int, compared: int, threshold: int) -> bool:
    """Agreement under ``threshold`` percent; no compared item counts as below (nothing shown)."""
    return compared == 0 or agree * 100 < threshold * compared


@dataclass(frozen=True)
class MemberSummary:
    member: ProjectMember
    done: int  # votes in the member's current round
    total: int  # seed items (sample x criterion of its split)
    per_criterion: list[CriterionAgreement]
    name: str = ""  # as the viewer may see it: username (lead), pseudonym or "you"
    threshold: int = 0  # the project's calibration threshold, percent

    @property
    def below_threshold(self) -> bool:
        """Marking this annotator calibrated asks for confirmation."""
        return below_threshold(agree=self.agree, compared=self.compared, threshold=self.threshold)

    @property
    def is_you(self) -> bool:
        return self.name == YOU

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.done >= self.total

    @property
    def agree(self) -> int:
        return sum(c.agree for c in self.per_criterion)

    @property
    def compared(self) -> int:
        return sum(c.compared for c in self.per_criterion)

    @property
    def percent(self) -> int | None:
        return round(100 * self.agree / self.compared) if self.compared else None


@dataclass(frozen=True)
class Discussion:
    samples: list[DiscussionSample]
    members: list[MemberSummary]
    criteria: list[Criterion]
    n_items: int  # seed items before filtering
    n_shown: int
    n_disagreements: int = 0
    splits: list[str] = field(default_factory=list)


def member_names(*, project: Project, members: list[ProjectMember], viewer: Any) -> dict[int, str]:
    """How ``viewer`` sees each member, by user id; sorts ``members`` by pseudonym for a non-lead.

    A lead (or no viewer) sees usernames; anyone else sees pseudonyms, and "you" for themself.
    """
    if viewer is None or is_lead(viewer):
        return {m.user_id: m.user.get_username() for m in members}
    pseudonyms = project_pseudonyms(project=project)
    # Pseudonym order ("you" at your own place): the usernames' order would name people.
    members.sort(key=lambda m: pseudonym_position(pseudonyms.name(m.user_id)))
    return {
        m.user_id: YOU if m.user_id == viewer.pk else pseudonyms.name(m.user_id) for m in members
    }


def calibration_discussion(
    *,
    project: Project,
    criterion_id: int | None = None,
    split: str | None = None,
    only_disagreements: bool = False,
    viewer: Any = None,
) -> Discussion:
    """Build the discussion of a project's seed items as ``viewer`` may see it, optionally filtered.

    Without a viewer (or for a lead) annotators are named by username.
    """
    criteria = list(Criterion.objects.filter(project=project).order_by("split", "order", "key"))
    criteria_by_split: dict[str, list[Criterion]] = defaultdict(list)
    for criterion in criteria:
        criteria_by_split[criterion.split].append(criterion)
    seeds = list(
        Sample.objects.filter(project=project, is_seed=True)
        .only(
            "id",
            "project_id",
            "external_id",
            "split",
            "question",
            "image",
            "image_web",
            "response_a",
            "response_b",
            "is_seed",
        )
        .order_by("split", "id")
    )
    members = list(
        ProjectMember.objects.filter(project=project, is_active=True)
        .select_related("user")
        .order_by("user__username")
    )
    references = {
        (ref.sample_id, ref.criterion_id): ref
        for ref in ReferenceLabel.objects.filter(sample__project=project, sample__is_seed=True)
    }
    names = member_names(project=project, members=members, viewer=viewer)
    member_by_user = {m.user_id: m for m in members}
    latest: dict[tuple[int, int, int], Vote] = {}
    current_round_counts: dict[int, int] = defaultdict(int)
    votes = (
        Vote.objects.filter(
            sample__project=project,
            sample__is_seed=True,
            round__gte=1,
            annotator_id__in=list(member_by_user),
        )
        .only(
            "sample_id",
            "criterion_id",
            "annotator_id",
            "round",
            "choice",
            "grade",
            "score_a",
            "score_b",
            "rationale",
        )
        .order_by("round")
    )
    for vote in votes:
        latest[(vote.sample_id, vote.criterion_id, vote.annotator_id)] = vote
        if vote.round == member_by_user[vote.annotator_id].calibration_round:
            current_round_counts[vote.annotator_id] += 1

    agreement: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    total_items = 0
    all_samples: list[DiscussionSample] = []
    for sample in seeds:
        items = []
        for criterion in criteria_by_split.get(sample.split, []):
            total_items += 1
            reference = references.get((sample.id, criterion.id))
            rows = []
            for member in members:
                vote = latest.get((sample.id, criterion.id, member.user_id))
                agrees = None
                if vote is not None and reference is not None:
                    agrees = vote.choice == reference.preference
                    counts = agreement[(member.user_id, criterion.id)]
                    counts[0] += int(agrees)
                    counts[1] += 1
                rows.append(
                    VoteRow(
                        member=member,
                        choice=vote.choice if vote else None,
                        rationale=vote.rationale if vote else "",
                        round=vote.round if vote else None,
                        agrees=agrees,
                        name=names[member.user_id],
                        answer=scales.answer_text(vote.grade, vote.score_a, vote.score_b)
                        if vote
                        else "",
                    )
                )
            items.append(DiscussionItem(sample, criterion, reference, rows))
        all_samples.append(DiscussionSample(sample, items))

    shown: list[DiscussionSample] = []
    n_shown = n_disagreements = 0
    for group in all_samples:
        if split and group.sample.split != split:
            continue
        kept = []
        for item in group.items:
            if criterion_id and item.criterion.id != criterion_id:
                continue
            disagreement = item.disagreement
            n_disagreements += int(disagreement)
            if only_disagreements and not disagreement:
                continue
            kept.append(item)
        if kept:
            shown.append(DiscussionSample(group.sample, kept))
            n_shown += len(kept)

    seed_splits = sorted({s.split for s in seeds})
    # Per-annotator bars cover the criteria that have seed items at all.
    seed_criteria = [c for c in criteria if c.split in seed_splits]
    summaries = [
        MemberSummary(
            member=member,
            done=current_round_counts[member.user_id],
            total=total_items,
            per_criterion=[
                CriterionAgreement(c, *agreement.get((member.user_id, c.id), (0, 0)))
                for c in seed_criteria
            ],
            name=names[member.user_id],
            threshold=project.calibration_threshold,
        )
        for member in members
    ]
    return Discussion(
        samples=shown,
        members=summaries,
        criteria=seed_criteria,
        n_items=total_items,
        n_shown=n_shown,
        n_disagreements=n_disagreements,
        splits=seed_splits,
    )
