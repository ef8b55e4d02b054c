"""``manage.py demo_setup``: build (or refresh) the demo project and print how to log in."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand

from aggregation.models import CriterionLabel
from aggregation.services.aggregate import aggregation_start
from demo.build import LEAD, demo_build


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
            # Started as the lead would start it: with no broker (the embedded default) the job
            # runs at once; with one, a worker runs it.
            lead = User.objects.get(username=LEAD)
            job = aggregation_start(project=project, created_by=lead)
            job.refresh_from_db()
            if job.is_finished:
                summary = job.result.get("summary", "") or job.error
                self.stdout.write(f"  aggregated the simulated votes: {summary}")
            else:
                self.stdout.write(f"  aggregation of the simulated votes queued as job #{job.pk}")
