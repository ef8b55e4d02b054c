"""``manage.py import_samples PROJECT FILE...``: validate the files fully, then import them."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from annotation.curation import FILTERS, parse_filters
from annotation.importing.errors import ImportRejected
from annotation.importing.service import samples_import
from annotation.models import LabelScale
from core.text import counted


class Command(BaseCommand):
    help = (
        "Import samples from a JSONL file (our format), a Multi-Crit row file (JSONL or "
        "Parquet), or a zip holding one of them plus its images. The project is created with "
        "the default criteria when the slug is new."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument(
            "file",
            nargs="+",
            help=".jsonl, .parquet or .zip; several Multi-Crit row files (per split or shard) "
            "are read as one",
        )
        parser.add_argument(
            "--images",
            default=None,
            metavar="DIR",
            help="images root: image_path is looked up here first, then beside the data file "
            "(for a zip: a folder inside it)",
        )
        parser.add_argument(
            "--update",
            action="store_true",
            help="replace samples whose content changed since an earlier import",
        )
        parser.add_argument(
            "--filter",
            dest="filters",
            default="",
            help=f"curation filters to apply, comma-separated: {','.join(FILTERS)}",
        )
        parser.add_argument("--name", default=None, help="name of the project if it is created")
        parser.add_argument(
            "--scale",
            default=None,
            choices=list(LabelScale.values),
            help="label scale of the project if it is created (default pairwise); an existing "
            "project keeps its own",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            filters = parse_filters(options["filters"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        bars: dict[str, tqdm] = {}
        show = options["verbosity"] > 0

        def progress(done: int, total: int | None = None, message: str = "") -> None:
            if not show:
                return
            bar = bars.get(message)
            if bar is None:
                for other in bars.values():
                    other.close()
                bar = bars[message] = tqdm(
                    total=total, desc=message or "Import", unit="sample", file=self.stderr._out
                )
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            report = samples_import(
                project=options["project"],
                path=options["file"],
                images=options["images"],
                update=options["update"],
                filters=filters,
                progress=progress,
                project_name=options["name"],
                label_scale=options["scale"],
            )
        except ImportRejected as exc:
            for bar in bars.values():
                bar.close()
            for problem in exc.problems:
                self.stderr.write(str(problem))
            if exc.more:
                self.stderr.write(f"... and {exc.more} more")
            raise CommandError(
                f"{counted(exc.count, 'error')} in {', '.join(options['file'])}; "
                "nothing was imported."
            ) from exc
        for bar in bars.values():
            bar.close()
        self.stdout.write(self.style.SUCCESS(report.summary()))
