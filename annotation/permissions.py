"""Role checks (Django groups ``lead`` and ``annotator``) and the view decorators built on them."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from .models import ANNOTATOR_GROUP, LEAD_GROUP


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


def lead_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Allow only logged-in leads; anonymous users go to the login page, others get 403."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_lead(request.user):
            raise PermissionDenied("This page is for the project lead.")
        return view(request, *args, **kwargs)

    return wrapped


def annotator_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Allow only logged-in annotators; anonymous users go to the login page, others get 403."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_annotator(request.user):
            raise PermissionDenied("This page is for annotators.")
        return view(request, *args, **kwargs)

    return wrapped


def media_allowed(user: Any, path: str) -> bool:
    """Whether ``user`` may read the media file at ``path`` (relative to MEDIA_ROOT).

    Sample images (``samples/<project id>/...``) go to leads and the project's active members;
    exports, uploads and anything else to leads only.
    """
    if is_lead(user):
        return True
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] == "samples" and parts[1].isdigit():
        from .models import ProjectMember

        return ProjectMember.objects.filter(
            project_id=int(parts[1]), user=user, is_active=True
        ).exists()
    return False
