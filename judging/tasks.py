"""Celery tasks of the judging app (autodiscovered); each task module is imported here."""
