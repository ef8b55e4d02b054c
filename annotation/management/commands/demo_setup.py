"""``manage.py demo_setup``: build (or refresh) the demo project and print how to log in."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from aggregation.models import CriterionLabel
from aggregation.services.aggregate import project_aggregate
from annotation.demo.build import demo_build
from core.jobs import job_create, job_execute
from core.models import Job


class Command(BaseCommand):
    help = (
        "Create the 'Multi-Crit demo' project with 60 samples (20 seeds), a lead and nine "
        "annotators, and simulated calibration and formal votes, aggregated once so the "
        "dashboard has figures. Running it again changes nothing."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = demo_build()
        for line in result.lines():
            self.stdout.write(line)
        project = result.project
        if not CriterionLabel.objects.filter(sample__project=project).exists():
            # Run as a recorded job, so the dashboard's job panel shows it like any other run.
            job = job_create(kind=Job.Kind.AGGREGATE, project=project)
            job = job_execute(
                job.pk,
                lambda job, progress: project_aggregate(
                    project=project, job=job, progress=progress
                ),
            )
            self.stdout.write(f"  aggregated the simulated votes: {job.result.get('summary', '')}")
