"""Who may do what: roles (Django groups ``lead`` and ``annotator``), project access, media access.

One helper per object decides: :func:`get_project_for_user` for a project (pages, both APIs and
media), :func:`require_annotator` for labeling it, :func:`get_job_for_user` for a job,
:func:`media_file` for a file under MEDIA_ROOT. Each decides before any id the request names is
looked up: an outsider gets the same answer for an object of another project as for an id that
names nothing. ``core`` sits below the apps, so it names
the project models by app label (as Job's foreign key does) and lets each app register the media
folders it owns (:func:`media_rule`, called from the app's ``ready``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from django.apps import apps
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from .media import media_path_normalise, media_resolve

#: The Django groups that carry the two roles.
LEAD_GROUP = "lead"
ANNOTATOR_GROUP = "annotator"

#: A media rule: may ``user`` read the file whose normalised path has these ``parts``?
MediaRule = Callable[[Any, list[str]], bool]
_MEDIA_RULES: dict[str, MediaRule] = {}


def media_rule(folder: str) -> Callable[[MediaRule], MediaRule]:
    """Register the rule deciding who reads files under the top-level media ``folder``."""

    def register(rule: MediaRule) -> MediaRule:
        if _MEDIA_RULES.get(folder, rule) is not rule:
            raise ValueError(f"media folder {folder!r} already has a rule")
        _MEDIA_RULES[folder] = rule
        return rule

    return register


def _project_models() -> tuple[Any, Any]:
    return apps.get_model("annotation", "Project"), apps.get_model("annotation", "ProjectMember")


def _in_group(user: Any, name: str) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    cache = getattr(user, "_group_names_cache", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._group_names_cache = cache
    return name in cache


def roles_remember(user: Any, groups: set[str]) -> None:
    """Record the role groups ``user`` is in (read with the user), so no query asks again."""
    user._group_names_cache = set(groups)


def is_lead(user: Any) -> bool:
    return bool(getattr(user, "is_superuser", False)) or _in_group(user, LEAD_GROUP)


def is_annotator(user: Any) -> bool:
    return _in_group(user, ANNOTATOR_GROUP)


def may_read_project(user: Any, project_id: int) -> bool:
    """Leads read every project; anyone else the projects they are an active member of."""
    _, ProjectMember = _project_models()
    return (
        is_lead(user)
        or ProjectMember.objects.filter(project_id=project_id, user=user, is_active=True).exists()
    )


def get_project_for_user(user: Any, slug: str) -> Any:
    """The project ``slug`` if ``user`` may read it; 404 if there is none, 403 otherwise.

    The one check of "who may read this project" for pages, API views and media.
    """
    Project, _ = _project_models()
    project = get_object_or_404(Project, slug=slug)
    if not may_read_project(user, project.pk):
        raise PermissionDenied("You are not a member of this project.")
    return project


def may_annotate(user: Any, project_id: int) -> bool:
    """Only the project's active members label it (a lead who is not one does not)."""
    _, ProjectMember = _project_models()
    return ProjectMember.objects.filter(
        project_id=project_id, user_id=user.pk, is_active=True
    ).exists()


def require_annotator(user: Any, project: Any) -> None:
    """PermissionDenied unless ``user`` labels ``project``; asked before any id it names is
    looked up, so an outsider gets one answer whether the id exists or not."""
    if not may_annotate(user, project.pk):
        raise PermissionDenied("You are not an annotator in this project.")


def get_job_for_user(user: Any, job_id: int) -> Any:
    """The job ``job_id`` if ``user`` may follow it: leads every job (404 if there is none),
    anyone else the jobs they started; any other id, existing or not, is refused alike (403)."""
    Job = apps.get_model("core", "Job")
    if is_lead(user):
        return get_object_or_404(Job, pk=job_id)
    job = Job.objects.filter(pk=job_id, created_by_id=user.pk).first()
    if job is None:
        raise PermissionDenied("Not your job.")
    return job


def get_member(project: Any, member_id: int) -> Any:
    """The membership ``member_id`` of ``project`` (with its user); 404 for any other id.

    The one lookup of a member from a URL: a member of another project looks missing.
    """
    _, ProjectMember = _project_models()
    return get_object_or_404(
        ProjectMember.objects.select_related("user"), pk=member_id, project=project
    )


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
    :func:`core.media.media_path_normalise`); the rule registered for its first folder decides,
    and a folder with no rule is refused. The rules (each app's ``media_rules`` module):

    * ``samples/<project id>/{original,web}/<file>``: leads and the project's active members;
    * ``imports/<project slug>/...``: leads;
    * ``versions/<project id>/<version folder>/<file>``: leads;
    * ``judging/uploads/v<version id>/<file>``: leads.
    """
    if not getattr(user, "is_authenticated", False):
        return None
    clean = media_path_normalise(path)
    if clean is None:
        return None
    parts = clean.split("/")
    rule = _MEDIA_RULES.get(parts[0])
    if rule is None or not rule(user, parts):
        return None
    return media_resolve(clean)


def canonical_int(text: str) -> int | None:
    """``int(text)`` for a plain positive decimal without leading zeros, else None."""
    if not text.isdigit() or not text.isascii() or text.startswith("0"):
        return None
    return int(text)
