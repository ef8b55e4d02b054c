"""``manage.py backup_create --out DIR``: the database, the media folder and a manifest, in DIR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from aggregation.selectors.version_files import version_filesets
from core.backup.manifest import MANIFEST_NAME, BackupRefused
from core.backup.procedure import backup_create
from core.backup.strategies import BackupFailed
from core.text import counted

#: The apps whose tables the manifest counts (and the restore compares).
COUNTED_APPS = ("auth", "core", "annotation", "aggregation", "judging", "curation")
#: The stored file sets the manifest lists with their checksums, and the restore verifies.
FILE_SETS = {"dataset_versions": version_filesets}


class Command(BaseCommand):
    help = (
        "Back up the configured database (PostgreSQL: a pg_dump custom-format dump; SQLite: a "
        "copy of the file) and MEDIA_ROOT (media.tar) into a new folder, with manifest.json: "
        "when, the applied migrations, both files' SHA-256, row counts and every dataset "
        "version's file checksums. Restore with backup_restore --from DIR."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--out", required=True, type=Path, help="A new (or empty) folder for the backup."
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            result = backup_create(
                out=Path(opts["out"]),
                connection=connection,
                media_root=Path(settings.MEDIA_ROOT),
                app_labels=COUNTED_APPS,
                file_sets=FILE_SETS,
            )
        except (BackupRefused, BackupFailed, OSError) as exc:
            raise CommandError(f"no backup written: {exc}") from None
        manifest = result.manifest
        database, media = manifest["database"], manifest["media"]
        versions = manifest["file_sets"]["dataset_versions"]
        self.stdout.write(
            f"{database['file']['name']}: {database['description']}, "
            f"{counted(database['file']['size'], 'byte')}, SHA-256 {database['file']['sha256']}"
        )
        self.stdout.write(
            f"{media['file']['name']}: {counted(media['files'], 'media file')}, "
            f"{counted(media['file']['size'], 'byte')}, SHA-256 {media['file']['sha256']}"
        )
        self.stdout.write(
            f"{MANIFEST_NAME}: {counted(len(manifest['row_counts']), 'table')} counted, "
            f"{counted(len(versions), 'dataset version')} with their checksums"
        )
        self.stdout.write(
            self.style.SUCCESS(f"Backup written to {result.directory} in {result.seconds:.1f} s")
        )
