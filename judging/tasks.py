"""Celery tasks of the judging app (autodiscovered); each task module is imported here."""

from .tasks_runner import judge_run_task
from .tasks_scoring import predictions_score

__all__ = ["judge_run_task", "predictions_score"]
