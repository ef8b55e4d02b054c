"""What the manifest records about the database: applied migrations and row counts."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.apps import apps
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder


def migrations_applied(connection: Any) -> dict[str, list[str]]:
    """The applied migrations per app, sorted; empty for a database Django never migrated."""
    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return {}
    applied: dict[str, list[str]] = defaultdict(list)
    for app, name in sorted(recorder.applied_migrations()):
        applied[app].append(name)
    return dict(applied)


def migrations_unknown(applied: dict[str, list[str]]) -> list[str]:
    """Migrations a backup had applied that this code does not have (a newer code's backup)."""
    known = set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    installed = {config.label for config in apps.get_app_configs()}
    return [
        f"{app}.{name}"
        for app, names in sorted(applied.items())
        if app in installed
        for name in names
        if (app, name) not in known
    ]


def row_counts(connection: Any, app_labels: tuple[str, ...]) -> dict[str, int]:
    """Rows per table of every concrete model of the given apps, by model label."""
    counts = {}
    for label in app_labels:
        for model in apps.get_app_config(label).get_models():
            if model._meta.managed and not model._meta.proxy:
                counts[model._meta.label] = model._base_manager.using(connection.alias).count()
    return dict(sorted(counts.items()))


def counts_differences(expected: dict[str, int], found: dict[str, int]) -> list[str]:
    """``label: N in the backup, M now`` for each table whose count differs."""
    return [
        f"{label}: {expected.get(label, 0):,} in the backup, {found.get(label, 0):,} now"
        for label in sorted(set(expected) | set(found))
        if expected.get(label, 0) != found.get(label, 0)
    ]
