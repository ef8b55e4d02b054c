"""Celery tasks of the aggregation app (autodiscovered); each task module is imported here."""

from .tasks_aggregate import aggregate_project  # noqa: F401
from .tasks_benchmark import benchmark_import_task  # noqa: F401
from .tasks_export import version_build_task  # noqa: F401
