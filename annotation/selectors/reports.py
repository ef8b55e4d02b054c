"""Reads for the lead's problem-report inbox."""

from __future__ import annotations

from django.db.models import QuerySet

from ..models import ProblemReport, Project, ProjectMember

STATES = ("open", "closed")


def reports_open_count(*, project: Project) -> int:
    """The reports on the project's samples that the lead has not closed yet."""
    return ProblemReport.objects.filter(sample__project=project, resolved_at__isnull=True).count()


def reports_inbox(*, project: Project, state: str = "open") -> QuerySet[ProblemReport]:
    """Open reports oldest first (the queue to work through), or closed ones latest first."""
    reports = ProblemReport.objects.filter(sample__project=project).select_related(
        "sample", "reporter", "resolved_by", "reassigned_to"
    )
    if state == "closed":
        return reports.filter(resolved_at__isnull=False).order_by("-resolved_at", "-id")
    return reports.filter(resolved_at__isnull=True).order_by("created_at", "id")


def reassign_targets(*, project: Project) -> list:
    """The users a reported sample may go to: calibrated, active annotators of the project."""
    members = ProjectMember.objects.filter(
        project=project, is_active=True, calibrated_at__isnull=False
    ).select_related("user")
    return [m.user for m in members.order_by("user__username")]
