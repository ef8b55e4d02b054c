"""Celery tasks of the annotation app (autodiscovered); each task module is imported here."""

from .tasks_assignment import reclaim_expired_leases  # noqa: F401
from .tasks_import import import_samples_task  # noqa: F401
