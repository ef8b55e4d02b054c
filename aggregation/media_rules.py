"""Who reads the media folder of dataset versions (registered with core.permissions)."""

from __future__ import annotations

from typing import Any

from annotation.models import Project
from core.permissions import canonical_int, is_lead, media_rule


@media_rule("versions")
def version_file(user: Any, parts: list[str]) -> bool:
    """``versions/<project id>/<version folder>/<file>``: leads."""
    if len(parts) != 4:
        return False
    project_id = canonical_int(parts[1])
    return (
        project_id is not None and Project.objects.filter(pk=project_id).exists() and is_lead(user)
    )
