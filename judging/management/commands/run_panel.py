"""Pre-label a project's formal (sample, criterion) items with a judge panel, for routing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Project
from judging.runner.run import RunnerError
from judging.services.panel import panel_configs, panel_run_execute


class Command(BaseCommand):
    help = (
        "Ask every judge config named with --judge about every (sample, criterion) of the "
        "project's formal samples in both orders, and store one panel label per item "
        "(replacing the project's earlier ones). Answers are cached: running it again asks "
        "only what is missing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="The project's slug.")
        parser.add_argument(
            "--judge",
            action="append",
            required=True,
            help="A saved judge config's name; repeat for a panel of several judges.",
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress line.")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"no project {options['project']!r}")
        shown = not options["no_progress"]

        def progress(done: int, total: int, line: str = "") -> None:
            if shown:
                self.stderr.write(f"\r{done:,}/{total:,} {line}"[:160], ending="")

        try:
            configs = panel_configs(options["judge"])
            result = panel_run_execute(project=project, configs=configs, progress=progress)
        except RunnerError as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            self.stderr.write("\nInterrupted: the answers so far are stored; run again to resume.")
            raise CommandError("interrupted") from None
        if shown:
            self.stderr.write("")
        self.stdout.write(result.summary())
