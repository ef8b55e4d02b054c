"""Every dataset version with its files' recorded checksums, as the backup lists and checks them."""

from __future__ import annotations

from django.core.files.storage import Storage

from core.backup.verify import FileSet, StoredFile

from ..models import DatasetFile, DatasetVersion


def version_key(version: DatasetVersion) -> str:
    return f"{version.project.slug} v{version.number}"


def version_filesets() -> list[FileSet]:
    """All versions (ready, building, failed) by project and number, each with its files."""
    versions = (
        DatasetVersion.objects.select_related("project")
        .prefetch_related("files")
        .order_by("project__slug", "number")
    )
    return [
        FileSet(
            key=version_key(version),
            status=version.status,
            files=tuple(
                StoredFile(name=f.file.name, kind=f.kind, sha256=f.sha256, size=f.size)
                for f in sorted(version.files.all(), key=lambda f: f.kind)
            ),
        )
        for version in versions
    ]


def version_file_storage() -> Storage:
    """The storage the version files live in."""
    return DatasetFile._meta.get_field("file").storage
