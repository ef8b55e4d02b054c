"""Celery tasks of the judging app (autodiscovered); each task module is imported here."""

from .tasks_scoring import predictions_score

__all__ = ["predictions_score"]
