"""Who reads the media folders of the annotation app (registered with core.permissions)."""

from __future__ import annotations

from typing import Any

from core.permissions import canonical_int, is_lead, may_read_project, media_rule

from .models import Project


@media_rule("samples")
def sample_image(user: Any, parts: list[str]) -> bool:
    """``samples/<project id>/{original,web}/<file>``: leads and the project's active members."""
    if len(parts) != 4 or parts[2] not in ("original", "web"):
        return False
    project_id = canonical_int(parts[1])
    if project_id is None or not Project.objects.filter(pk=project_id).exists():
        return False
    return may_read_project(user, project_id)


@media_rule("imports")
def import_upload(user: Any, parts: list[str]) -> bool:
    """``imports/<project slug>/...``: leads."""
    return len(parts) >= 3 and Project.objects.filter(slug=parts[1]).exists() and is_lead(user)
