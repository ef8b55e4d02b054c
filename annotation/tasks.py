"""Celery tasks of the annotation app (autodiscovered); each task module is imported here."""

from .tasks_assignment import reclaim_expired_leases  # noqa: F401
