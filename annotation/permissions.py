"""Role checks (Django groups ``lead`` and ``annotator``) and the view decorators built on them."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from .models import ANNOTATOR_GROUP, LEAD_GROUP, Project, ProjectMember


def _in_group(user: Any, name: str) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    cache = getattr(user, "_group_names_cache", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._group_names_cache = cache
    return name in cache


def is_lead(user: Any) -> bool:
    return bool(getattr(user, "is_superuser", False)) or _in_group(user, LEAD_GROUP)


def is_annotator(user: Any) -> bool:
    return _in_group(user, ANNOTATOR_GROUP)


def may_read_project(user: Any, project_id: int) -> bool:
    """Leads read every project; anyone else the projects they are an active member of."""
    return (
        is_lead(user)
        or ProjectMember.objects.filter(project_id=project_id, user=user, is_active=True).exists()
    )


def get_project_for_user(user: Any, slug: str) -> Project:
    """The project ``slug`` if ``user`` may read it; 404 if there is none, 403 otherwise.

    The one check of "who may read this project" for pages, API views and media.
    """
    project = get_object_or_404(Project, slug=slug)
    if not may_read_project(user, project.pk):
        raise PermissionDenied("You are not a member of this project.")
    return project


def lead_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Allow only logged-in leads; anonymous users go to the login page, others get 403."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_lead(request.user):
            raise PermissionDenied("This page is for the project lead.")
        return view(request, *args, **kwargs)

    return wrapped


def media_file(user: Any, path: str) -> Path | None:
    """The file under MEDIA_ROOT that ``user`` may read at ``path`` (URL-decoded), or None.

    The only place that decides who reads media. The path is normalised first (see
    :func:`annotation.media.media_path_normalise`); its project part is looked up in the
    database for every known prefix, and any other prefix is refused:

    * ``samples/<project id>/{original,web}/<file>``: leads and the project's active members;
    * ``versions/<project id>/<version folder>/<file>``: leads;
    * ``imports/<project slug>/...``: leads;
    * ``judging/uploads/v<version id>/<file>``: leads.
    """
    from aggregation.models import DatasetVersion

    from .media import media_path_normalise, media_resolve
    from .models import Project

    if not getattr(user, "is_authenticated", False):
        return None
    clean = media_path_normalise(path)
    if clean is None:
        return None
    parts = clean.split("/")
    head = parts[0]
    if head == "samples" and len(parts) == 4 and parts[2] in ("original", "web"):
        project_id = _canonical_int(parts[1])
        if project_id is None or not Project.objects.filter(pk=project_id).exists():
            return None
        allowed = may_read_project(user, project_id)
    elif head == "versions" and len(parts) == 4:
        project_id = _canonical_int(parts[1])
        allowed = (
            project_id is not None
            and Project.objects.filter(pk=project_id).exists()
            and is_lead(user)
        )
    elif head == "imports" and len(parts) >= 3:
        allowed = Project.objects.filter(slug=parts[1]).exists() and is_lead(user)
    elif head == "judging" and len(parts) == 4 and parts[1] == "uploads":
        version_id = _canonical_int(parts[2].removeprefix("v")) if parts[2][:1] == "v" else None
        allowed = (
            version_id is not None
            and DatasetVersion.objects.filter(pk=version_id).exists()
            and is_lead(user)
        )
    else:
        allowed = False
    return media_resolve(clean) if allowed else None


def _canonical_int(text: str) -> int | None:
    """``int(text)`` for a plain positive decimal without leading zeros, else None."""
    if not text.isdigit() or not text.isascii() or text.startswith("0"):
        return None
    return int(text)
