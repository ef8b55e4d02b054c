"""``manage.py import_benchmark PROJECT FILE...``: the published rows as a ready version."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from aggregation.services.benchmark import benchmark_import
from annotation.importing.errors import ImportRejected
from core.text import counted


class Command(BaseCommand):
    help = (
        "Import the published Multi-Crit rows (Parquet shards or JSONL, several files read as "
        "one) into a project of their own and freeze a dataset version whose labels are the "
        "published preferences. Running it again with the same files changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project slug (created with the default criteria)")
        parser.add_argument("files", nargs="+", help=".parquet, .jsonl or .zip files")
        parser.add_argument(
            "--images",
            default=None,
            metavar="DIR",
            help="images root for image_path (flattened JSONL); tried before each file's folder",
        )
        parser.add_argument("--name", default=None, help="name of the project if it is created")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = benchmark_import(
                project=options["project"],
                paths=options["files"],
                images=options["images"],
                project_name=options["name"],
            )
        except ImportRejected as exc:
            for problem in exc.problems:
                self.stderr.write(str(problem))
            if exc.more:
                self.stderr.write(f"... and {exc.more} more")
            raise CommandError(f"{counted(exc.count, 'error')}; nothing was imported.") from exc
        self.stdout.write(self.style.SUCCESS(result.summary()))
        version = result.version
        self.stdout.write(
            f"Score a judge: python manage.py score_judge {version.project.slug}:v{version.number}"
            " JUDGE_OUTPUTS.jsonl"
        )
