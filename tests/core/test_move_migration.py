"""Moving Job and ApiToken from annotation to core changed the migration state, not the data."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("annotation", "0004_vote_revision_window"),
    ("aggregation", "0002_version_immutability_triggers"),
    ("judging", "0001_initial"),
]
AFTER = [
    ("annotation", "0006_job_moved_to_core"),
    ("core", "0001_initial"),
    ("aggregation", "0003_job_in_core"),
    ("judging", "0002_job_in_core"),
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_jobs_and_tokens_made_before_the_move_are_read_after_it():
    old = _migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="keeper")
    project = old.get_model("annotation", "Project").objects.create(name="P", slug="p")
    job = old.get_model("annotation", "Job").objects.create(
        kind="import", project=project, created_by=user, status="succeeded", done=7, total=7
    )
    old.get_model("annotation", "ApiToken").objects.create(
        user=user, name="reader", prefix="mcs_abcd", key_hash="f" * 64, scope="read"
    )
    # As in a database made before the move: the models' content types under "annotation".
    content_type = old.get_model("contenttypes", "ContentType")
    content_type.objects.filter(app_label="core").delete()
    for model in ("job", "apitoken"):
        content_type.objects.get_or_create(app_label="annotation", model=model)

    new = _migrate(AFTER)
    moved = new.get_model("core", "Job").objects.get(pk=job.pk)
    assert (moved.kind, moved.project_id, moved.created_by_id, moved.done) == (
        "import",
        project.pk,
        user.pk,
        7,
    )
    token = new.get_model("core", "ApiToken").objects.get()
    assert (token.user_id, token.name, token.key_hash) == (user.pk, "reader", "f" * 64)
    labels = set(
        new.get_model("contenttypes", "ContentType")
        .objects.filter(model__in=["job", "apitoken"])
        .values_list("app_label", "model")
    )
    assert labels == {("core", "job"), ("core", "apitoken")}
    _migrate(executor_leaf_nodes())


def executor_leaf_nodes():
    """Every app's latest migration: the database the rest of the suite expects."""
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()
