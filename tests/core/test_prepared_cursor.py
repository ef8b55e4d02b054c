"""prepared_cursor: hot statements parsed and planned once per connection on PostgreSQL."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from annotation.models import Project
from annotation.services.projects import project_create
from core.db import prepared_cursor

on_postgres = pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
    reason="statements are prepared on PostgreSQL only",
)

SQL = "SELECT name, annotators_per_sample FROM annotation_project WHERE slug = %s"


def _prepared(statement: str) -> list[tuple[str, int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
            " WHERE statement = %s",
            [statement],
        )
        return cursor.fetchall()


def _read(slug: str) -> tuple | None:
    with prepared_cursor() as cursor:
        cursor.execute(SQL, [slug])
        return cursor.fetchone()


@pytest.mark.django_db
def test_rows_are_the_same_as_an_ordinary_cursor():
    project_create(name="Prepared", slug="prepared")
    with connection.cursor() as cursor:
        cursor.execute(SQL, ["prepared"])
        expected = cursor.fetchone()
    assert _read("prepared") == expected == ("Prepared", 3)
    assert _read("no-such-project") is None


@on_postgres
@pytest.mark.django_db
def test_a_statement_is_prepared_once_then_planned_generically():
    project_create(name="Prepared", slug="prepared")
    server_sql = SQL.replace("%s", "$1")
    assert _prepared(server_sql) == []
    for _ in range(12):
        assert _read("prepared") == ("Prepared", 3)
    [(_statement, generic, custom)] = _prepared(server_sql)
    # PostgreSQL tries 5 custom plans, then keeps the generic one: no planning per execution.
    assert (generic, custom) == (7, 5)


@on_postgres
@pytest.mark.django_db
def test_preparing_off_still_runs_the_statement():
    """DB_PREPARED_STATEMENTS=0 sets the threshold to None: bound on the server, unprepared."""
    project_create(name="Unprepared", slug="unprepared")
    raw = connection.connection
    saved, raw.prepare_threshold = raw.prepare_threshold, None
    try:
        for _ in range(3):
            assert _read("unprepared") == ("Unprepared", 3)
        assert _prepared(SQL.replace("%s", "$1")) == []
    finally:
        raw.prepare_threshold = saved


@on_postgres
def test_the_setting_prepares_by_default():
    assert settings.DATABASES["default"]["OPTIONS"]["prepare_threshold"] == 5


@pytest.mark.django_db
def test_captured_queries_show_the_statement_with_its_parameters():
    project_create(name="Logged", slug="logged")
    with CaptureQueriesContext(connection) as captured:
        assert _read("logged") == ("Logged", 3)
    [query] = captured.captured_queries
    assert query["sql"].startswith("SELECT name, annotators_per_sample FROM annotation_project")
    assert "'logged'" in query["sql"]


@on_postgres
@pytest.mark.django_db
def test_database_errors_are_djangos_and_leave_the_transaction_usable():
    project = project_create(name="Unique", slug="unique")
    insert = "INSERT INTO annotation_project SELECT * FROM annotation_project WHERE id = %s"
    for _ in range(2):  # the second time through the prepared statement
        with (
            pytest.raises(IntegrityError) as clash,
            transaction.atomic(),
            prepared_cursor() as cursor,
        ):
            cursor.execute(insert, [project.pk])
        assert "duplicate key" in str(clash.value)
    assert Project.objects.filter(slug="unique").count() == 1
    assert _read("unique") == ("Unique", 3)
