"""Celery tasks of the aggregation app (autodiscovered); each task module is imported here."""
