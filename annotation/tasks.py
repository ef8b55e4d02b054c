"""Celery tasks of the annotation app (autodiscovered); each task module is imported here."""
