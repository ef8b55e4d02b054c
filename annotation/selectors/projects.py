"""Reads shared by several views."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from ..models import Project, ProjectMember, Vote


def project_get(*, slug: str) -> Project:
    return get_object_or_404(Project, slug=slug)


def project_list_with_counts() -> QuerySet[Project]:
    return Project.objects.annotate(
        n_samples=Count("samples", filter=Q(samples__is_seed=False), distinct=True),
        n_seeds=Count("samples", filter=Q(samples__is_seed=True), distinct=True),
        n_members=Count("members", filter=Q(members__is_active=True), distinct=True),
    ).order_by("name")


def memberships_for(*, user: Any) -> QuerySet[ProjectMember]:
    return ProjectMember.objects.filter(user=user, is_active=True).select_related("project")


def project_has_formal_votes(*, project: Project) -> bool:
    """True once any formal (non-seed, round 0) vote exists: the settings it fixes are locked."""
    return Vote.objects.filter(
        sample__project=project, sample__is_seed=False, round=Vote.FORMAL_ROUND
    ).exists()
