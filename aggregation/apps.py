from django.apps import AppConfig


class AggregationConfig(AppConfig):
    name = "aggregation"
    verbose_name = "Aggregation, review and export"

    def ready(self) -> None:
        """Register the media rule; fail the versions of a job abandoned for good."""
        from core.jobs import job_abandoned

        from . import media_rules  # noqa: F401  (registers who reads versions/)

        job_abandoned.connect(_job_abandoned, dispatch_uid="aggregation.version_build_abandoned")


def _job_abandoned(sender: object, job: object, **kwargs: object) -> None:
    from .services.versions import version_build_abandoned

    version_build_abandoned(job)
