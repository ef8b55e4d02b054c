"""``manage.py demo_setup``: build (or refresh) the demo project and print how to log in."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from aggregation.models import CriterionLabel
from aggregation.services.aggregate import project_aggregate
from annotation.demo.build import demo_build


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
        if not CriterionLabel.objects.filter(sample__project=result.project).exists():
            outcome = project_aggregate(project=result.project)
            self.stdout.write(f"  aggregated the simulated votes: {outcome.get('summary', '')}")
