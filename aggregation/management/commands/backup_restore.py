"""``manage.py backup_restore --from DIR``: a backup_create folder into the configured database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from aggregation.selectors.version_files import version_file_storage
from core.backup.manifest import BackupRefused
from core.backup.procedure import RestoreResult, backup_restore
from core.backup.strategies import BackupFailed
from core.backup.verify import FileSetCheck
from core.text import counted

from .backup_create import FILE_SETS


def _check_line(check: FileSetCheck) -> str:
    head = f"{check.key} ({check.status}): {counted(check.files, 'file')}"
    if check.ok:
        return f"OK        {head}, {counted(check.size, 'byte')}, checksums match"
    return f"MISMATCH  {head}: " + "; ".join(check.problems)


class Command(BaseCommand):
    help = (
        "Restore a backup_create folder into the configured database and MEDIA_ROOT. The "
        "manifest's SHA-256s are checked first; a database or media folder that is not empty is "
        "refused unless --force. Then migrate runs, and every dataset version's files are "
        "checked against their stored checksums: one OK or MISMATCH line each, and a non-zero "
        "exit on any mismatch. Stop the web server and the workers first."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--from", dest="source", required=True, type=Path, help="The backup folder."
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="Restore into a database or media folder that is not empty: the backup's "
            "tables replace those of the same name, its files overwrite those of the same path.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        storage = version_file_storage()
        try:
            result = backup_restore(
                source=Path(opts["source"]),
                connection=connection,
                media_root=Path(settings.MEDIA_ROOT),
                replace=opts["force"],
                file_sets=FILE_SETS,
                open_file=lambda name: storage.open(name, "rb"),
                migrate=lambda: call_command(
                    "migrate", interactive=False, verbosity=1, stdout=self.stdout
                ),
            )
        except (BackupRefused, BackupFailed, OSError) as exc:
            raise CommandError(str(exc)) from None
        self._report(result)

    def _report(self, result: RestoreResult) -> None:
        manifest = result.manifest
        self.stdout.write(
            f"Restored the backup of {manifest['created_at']} ({result.strategy.description}, "
            f"{counted(result.media_files, 'media file')}); its checksums matched."
        )
        if not result.count_differences:
            tables = counted(len(manifest.get("row_counts") or {}), "table")
            self.stdout.write(f"Row counts: as in the backup ({tables}).")
        for line in result.count_differences:
            kind = "after the migrations" if result.migrated else "MISMATCH"
            self.stdout.write(f"Row count {kind}: {line}")
        for check in result.checks:
            self.stdout.write(_check_line(check))
        bad = sum(not check.ok for check in result.checks)
        if not result.ok:
            raise CommandError(
                f"the restore does not match the backup: {counted(bad, 'dataset version')} "
                "with a mismatch" + (", row counts differ" if result.count_differences else "")
            )
        self.stdout.write(
            self.style.SUCCESS(f"Verified: {counted(len(result.checks), 'dataset version')} OK.")
        )
