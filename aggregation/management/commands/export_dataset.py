"""Write a dataset version's files (JSONL, zip, Parquet, manifest) to a directory."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from aggregation.selectors.export import versions_ready
from aggregation.services.versions import version_build
from annotation.models import Project
from core.text import counted

COPY_CHUNK = 1024 * 1024


def _copy_verified(record: Any, target: Path) -> None:
    """Copy a stored file, checking its SHA-256 and size against the version's record."""
    digest = hashlib.sha256()
    size = 0
    try:
        with record.file.storage.open(record.file.name, "rb") as src, open(target, "wb") as dst:
            while chunk := src.read(COPY_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                dst.write(chunk)
    except FileNotFoundError:
        raise CommandError(f"the stored file {record.file.name} is missing") from None
    if digest.hexdigest() != record.sha256 or size != record.size:
        target.unlink(missing_ok=True)
        raise CommandError(
            f"{record.file.name}: checksum mismatch (stored {record.sha256}, "
            f"read {digest.hexdigest()}, {size} bytes); the file was not written"
        )


class Command(BaseCommand):
    help = (
        "Write the files of a dataset version to --out: a new version built from the current "
        "labels, or with --version N the stored files of version N (checksums verified)."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # ``--version N`` names a dataset version here; it replaces Django's --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="Project slug.")
        parser.add_argument("--version", type=int, help="Copy this existing version's files.")
        parser.add_argument("--votes", action="store_true", help="Include the votes column.")
        parser.add_argument(
            "--seeds",
            action="store_true",
            default=None,
            help="Include seed samples (default: the project's setting).",
        )
        parser.add_argument(
            "--contested",
            action="store_true",
            help="Also export the contested split: every dropped label with its votes.",
        )
        parser.add_argument("--by", help="Username recorded as the version's author.")
        parser.add_argument("--out", required=True, type=Path, help="Output directory.")

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project with slug {opts['project']!r}")
        out: Path = opts["out"]
        out.mkdir(parents=True, exist_ok=True)
        if opts["version"] is None:
            by = None
            if opts["by"]:
                by = get_user_model().objects.filter(username=opts["by"]).first()
                if by is None:
                    raise CommandError(f"no user {opts['by']!r}")

            def progress(done: int, total: int | None = None, message: str | None = None) -> None:
                self.stderr.write(f"\r{done}/{total or '?'} rows", ending="")

            version = version_build(
                project=project,
                by=by,
                include_votes=opts["votes"],
                include_seeds=opts["seeds"],
                include_contested=opts["contested"],
                progress=progress,
            )
            self.stderr.write("")
        else:
            if opts["votes"] or opts["seeds"] or opts["contested"]:
                raise CommandError(
                    "--votes, --seeds and --contested only apply when building a new version"
                )
            version = versions_ready(project=project).filter(number=opts["version"]).first()
            if version is None:
                raise CommandError(f"{project.slug} has no ready version {opts['version']}")
        for record in version.files.order_by("kind"):
            target = out / Path(record.file.name).name
            if opts["version"] is None:
                # Just built: copy without reading twice (the service hashed the files).
                with (
                    record.file.storage.open(record.file.name, "rb") as src,
                    open(target, "wb") as dst,
                ):
                    shutil.copyfileobj(src, dst, COPY_CHUNK)
            else:
                _copy_verified(record, target)
            self.stdout.write(f"{target}  {record.size} bytes  sha256 {record.sha256}")
        self.stdout.write(
            self.style.SUCCESS(
                f"{project.slug} v{version.number}: {counted(version.row_count, 'row')} "
                f"written to {out}"
            )
        )
