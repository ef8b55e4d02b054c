"""``manage.py curate PROJECT GENERATIONS``: import raw generations, pair, filter, promote."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from annotation.importing.errors import ImportRejected
from annotation.services.projects import project_get_or_create

from ...filters import FILTERS, LENGTH_UNITS, parse_filters
from ...presenters.funnel import funnel_text
from ...services.generations import generations_import
from ...services.pipeline import RunOptions, curation_run
from ...services.promote import pairs_promote
from ...services.verdicts import CurationError


class Command(BaseCommand):
    help = (
        "Import a generations file (JSONL, Parquet, or a zip with its images), build candidate "
        "pairs, apply the curation filters with every decision recorded, print the funnel, and "
        "optionally promote the kept pairs to samples. The project is created when new."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("generations", help=".jsonl, .parquet or .zip")
        parser.add_argument("--images", default=None, metavar="DIR", help="images root")
        parser.add_argument(
            "--update",
            action="store_true",
            help="replace prompts whose content changed since an earlier import",
        )
        parser.add_argument(
            "--pairs-per-prompt",
            type=int,
            default=2,
            metavar="N",
            help="cross-model pairs per prompt (default 2)",
        )
        parser.add_argument(
            "--same-model",
            action="store_true",
            help="add per model the two samples furthest apart (cosine, TF-IDF)",
        )
        parser.add_argument(
            "--filters",
            default=",".join(FILTERS),
            help=f"comma-separated, applied in protocol order (default "
            f"{','.join(FILTERS)}; 'none' for no filter)",
        )
        parser.add_argument("--length-unit", default="words", choices=LENGTH_UNITS)
        parser.add_argument(
            "--judges",
            default="",
            metavar="CONFIG,...",
            help="judge configurations for the ensemble filter (needs the "
            "judge runner); without it the file's verdicts are used",
        )
        parser.add_argument(
            "--promote",
            type=int,
            default=None,
            metavar="N",
            help="promote N kept pairs (stratified by split and source); 0: all",
        )
        parser.add_argument(
            "--calibration-seeds",
            type=int,
            default=0,
            metavar="N",
            help="of the promoted pairs, N become calibration seed samples",
        )
        parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["pairs_per_prompt"] < 0:
            raise CommandError("--pairs-per-prompt must be 0 or more")
        try:
            text = options["filters"]
            filters = [] if text.strip() == "none" else parse_filters(text)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        judges = tuple(j.strip() for j in options["judges"].split(",") if j.strip())
        run_options = RunOptions(
            pairs_per_prompt=options["pairs_per_prompt"],
            same_model=options["same_model"],
            filters=tuple(filters),
            judges=judges,
            seed=options["seed"],
            length_unit=options["length_unit"],
        )
        show = options["verbosity"] > 0
        bars: dict[str, tqdm] = {}

        def progress(done: int, total: int | None = None, message: str = "") -> None:
            if not show:
                return
            bar = bars.get(message)
            if bar is None:
                for other in bars.values():
                    other.close()
                bar = bars[message] = tqdm(
                    total=total, desc=message or "Curate", file=self.stderr._out
                )
            bar.total = total
            bar.n = done
            bar.refresh()

        project, created = project_get_or_create(slug=options["project"])
        try:
            report = generations_import(
                project=project,
                path=options["generations"],
                images=options["images"],
                update=options["update"],
                progress=progress,
            )
            run = curation_run(project=project, options=run_options, progress=progress)
            promoted = None
            if options["promote"] is not None:
                count = options["promote"] or None
                promoted = pairs_promote(
                    project=project,
                    count=count,
                    seed=options["seed"],
                    calibration_seeds=options["calibration_seeds"],
                    progress=progress,
                )
        except (ImportRejected, CurationError) as exc:
            if created and not project.raw_prompts.exists():
                project.delete()  # a refused file leaves no empty project behind
            raise CommandError(str(exc)) from exc
        finally:
            for bar in bars.values():
                bar.close()
        self.stdout.write(report.summary() + ".")
        self.stdout.write(funnel_text(run.funnel))
        if promoted is not None:
            self.stdout.write("Promoted: " + promoted.summary() + ".")
