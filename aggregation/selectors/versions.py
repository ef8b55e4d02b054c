"""Reads of a version's page: the previous version, the changes since it, the dataset card."""

from __future__ import annotations

from annotation.models import Criterion

from ..export.card import dataset_card
from ..export.diff import VersionDiff, rows_diff
from ..models import DatasetRow, DatasetVersion

_ROW_FIELDS = ("question_id", "split", "criterion", "preference")


def version_previous(*, version: DatasetVersion) -> DatasetVersion | None:
    """The project's ready version numbered just below ``version`` (None for the first)."""
    return (
        DatasetVersion.objects.filter(
            project_id=version.project_id,
            status=DatasetVersion.Status.READY,
            number__lt=version.number,
        )
        .order_by("-number")
        .first()
    )


def version_diff(*, version: DatasetVersion, previous: DatasetVersion) -> VersionDiff:
    """Rows added, removed and with another preference in ``version`` since ``previous``."""
    rows = DatasetRow.objects.values_list(*_ROW_FIELDS)
    return rows_diff(rows.filter(version=previous), rows.filter(version=version))


def version_card(*, version: DatasetVersion) -> str:
    """The version's dataset card (Markdown), with the criteria as the project names them."""
    names = {
        (split, key): name
        for split, key, name in Criterion.objects.filter(project_id=version.project_id).values_list(
            "split", "key", "name"
        )
    }
    return dataset_card(version.manifest or {}, criterion_names=names, notes=version.lead_notes)
