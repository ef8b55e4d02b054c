"""The lead's notes on a dataset version: metadata, editable after the version is frozen."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from ..models import DatasetVersion


@transaction.atomic
def version_notes_update(*, version: DatasetVersion, notes: str, by: Any) -> DatasetVersion:
    """Store the lead's notes on ``version`` (its rows, files and manifest stay as they are)."""
    notes = notes.strip()
    DatasetVersion.objects.filter(pk=version.pk).update(
        lead_notes=notes, lead_notes_by=by, lead_notes_at=timezone.now()
    )
    version.refresh_from_db(fields=["lead_notes", "lead_notes_by", "lead_notes_at"])
    return version
