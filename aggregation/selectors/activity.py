"""The annotators' activity over time: votes per day, votes since the figures, one's votes.

Each function is one grouped query whatever the number of votes; the per-annotator vote list
pages by id (newest first) so that an annotator with 50,000 votes opens as fast as one with 5.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from annotation.models import Choice, Project, SampleStatus, Vote, VoteRevision

THROUGHPUT_DAYS = 14
VOTES_PAGE = 50


@dataclass(frozen=True)
class Throughput:
    """Formal votes per day (oldest first) of each annotator who voted in the window."""

    days: list[date]
    series: dict[str, list[int]]  # username -> one count per day
    user_ids: dict[str, int]

    @property
    def totals(self) -> list[int]:
        return [sum(col) for col in zip(*self.series.values(), strict=True)] or [0] * len(self.days)


def _formal(project: Project) -> QuerySet[Vote]:
    return Vote.objects.filter(
        sample__project=project,
        sample__is_seed=False,
        sample__status=SampleStatus.ACTIVE,
        round=Vote.FORMAL_ROUND,
    )


def _window_start(days: int) -> tuple[date, datetime]:
    first = timezone.localdate() - timedelta(days=days - 1)
    return first, timezone.make_aware(datetime.combine(first, time.min))


def throughput_counts(
    *,
    project: Project,
    days: int = THROUGHPUT_DAYS,
    upto: int | None = None,
    after: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Per annotator id (as text): username and votes per day (ISO date) in the window.

    ``upto`` / ``after`` keep the votes of that id range (a stored part and what came since).
    """
    _, start = _window_start(days)
    votes = _formal(project).filter(created_at__gte=start)
    if upto is not None:
        votes = votes.filter(id__lte=upto)
    if after is not None:
        votes = votes.filter(id__gt=after)
    rows = (
        votes.annotate(day=TruncDate("created_at", tzinfo=timezone.get_current_timezone()))
        .values("annotator_id", "annotator__username", "day")
        .annotate(n=Count("id"))
        .order_by()
    )
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = out.setdefault(
            str(row["annotator_id"]), {"username": row["annotator__username"], "days": {}}
        )
        day = row["day"].isoformat()
        entry["days"][day] = entry["days"].get(day, 0) + row["n"]
    return out


def throughput(
    *,
    project: Project,
    days: int = THROUGHPUT_DAYS,
    base: dict[str, dict[str, Any]] | None = None,
    after: int | None = None,
) -> Throughput:
    """Votes cast per day per annotator over the last ``days`` days (today included).

    A day is a calendar day in the server's time zone (``TIME_ZONE``); a revised vote counts on
    the day it was first cast. ``base`` holds stored counts (see :func:`throughput_counts`) of
    the votes up to id ``after``; only the votes since are then read.
    """
    first, _ = _window_start(days)
    counts = throughput_counts(project=project, days=days, after=after)
    day_list = [first + timedelta(days=i) for i in range(days)]
    index = {d.isoformat(): i for i, d in enumerate(day_list)}
    series: dict[str, list[int]] = {}
    user_ids: dict[str, int] = {}
    for part in (base or {}, counts):
        for annotator_id, entry in part.items():
            days_in_window = [(d, n) for d, n in entry["days"].items() if d in index]
            if not days_in_window:
                continue
            name = entry["username"]
            user_ids[name] = int(annotator_id)
            row = series.setdefault(name, [0] * days)
            for day, n in days_in_window:
                row[index[day]] += n
    ordered = dict(sorted(series.items()))
    return Throughput(days=day_list, series=ordered, user_ids=user_ids)


def votes_since(*, project: Project, since: datetime | None, after_id: int | None = None) -> int:
    """Formal votes cast or revised after ``since`` (all of them when there is no ``since``).

    With ``after_id`` (every vote up to that id was cast before ``since``), new votes are read
    by primary-key range and older ones through their revisions, not by scanning every vote.
    """
    votes = _formal(project)
    if since is None:
        return votes.count()
    if after_id is None:
        return votes.filter(updated_at__gt=since).count()
    new = votes.filter(id__gt=after_id, updated_at__gt=since).count()
    # Joined from the revisions (few) to their votes, never the other way round.
    revised = (
        VoteRevision.objects.filter(
            replaced_at__gt=since,
            vote_id__lte=after_id,
            vote__sample__project=project,
            vote__sample__is_seed=False,
            vote__sample__status=SampleStatus.ACTIVE,
            vote__round=Vote.FORMAL_ROUND,
        )
        .values("vote_id")
        .distinct()
        .count()
    )
    return new + revised


def annotator_votes_page(
    *, project: Project, annotator_id: int, day: date | None = None, before: int | None = None
) -> dict[str, Any]:
    """One page of an annotator's votes in the project, newest first, calibration included.

    ``day`` keeps the votes first cast that day; ``before`` pages on (votes with a smaller id).
    """
    votes = Vote.objects.filter(sample__project=project, annotator_id=annotator_id)
    if day is not None:
        start = timezone.make_aware(datetime.combine(day, time.min))
        votes = votes.filter(created_at__gte=start, created_at__lt=start + timedelta(days=1))
    counts = votes.aggregate(
        total=Count("id"),
        ties=Count("id", filter=Q(choice=Choice.TIE)),
    )
    page = votes.order_by("-id")
    if before is not None:
        page = page.filter(id__lt=before)
    rows = list(
        page.select_related("sample", "criterion").only(
            "id",
            "choice",
            "grade",
            "score_a",
            "score_b",
            "rationale",
            "seconds",
            "round",
            "created_at",
            "updated_at",
            "sample__id",
            "sample__external_id",
            "sample__split",
            "criterion__name",
        )[: VOTES_PAGE + 1]
    )
    more = len(rows) > VOTES_PAGE
    rows = rows[:VOTES_PAGE]
    return {
        "votes": rows,
        "total": counts["total"],
        "ties": counts["ties"],
        "next_before": rows[-1].pk if more and rows else None,
    }
