"""Who reads the media folder of uploaded predictions (registered with core.permissions)."""

from __future__ import annotations

from typing import Any

from aggregation.models import DatasetVersion
from core.permissions import canonical_int, is_lead, media_rule


@media_rule("judging")
def predictions_upload(user: Any, parts: list[str]) -> bool:
    """``judging/uploads/v<version id>/<file>``: leads."""
    if len(parts) != 4 or parts[1] != "uploads" or parts[2][:1] != "v":
        return False
    version_id = canonical_int(parts[2].removeprefix("v"))
    return (
        version_id is not None
        and DatasetVersion.objects.filter(pk=version_id).exists()
        and is_lead(user)
    )
