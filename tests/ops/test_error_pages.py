"""The 404 and 500 pages in the site's look, and requests surviving a database restart."""

from __future__ import annotations

from wsgiref.util import setup_testing_defaults

import psycopg
import pytest
from django.core.wsgi import get_wsgi_application
from django.db import connection
from django.test import Client

from tests.conftest import make_user


@pytest.mark.urls("tests.ops.error_urls")
def test_unhandled_error_renders_the_site_500_page_without_traceback(db, settings):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    response = client.get("/test-only/fail/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong" in body
    assert 'class="topbar"' in body and "/static/css/app.css" in body
    assert "Traceback" not in body
    assert "secret detail" not in body and "RuntimeError" not in body


def test_unknown_address_renders_the_site_404_page(db, settings):
    settings.DEBUG = False
    user = make_user("someone")
    client = Client()
    client.force_login(user)
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Page not found" in body and "/no/such/page/" in body
    assert 'class="topbar"' in body and "someone" in body


def _terminate_other_backends() -> int:
    """Kill every other session on the test database, as a PostgreSQL restart would.

    Waits until each backend has exited, as after a restart (the server has closed the socket).
    """
    params = connection.get_connection_params()
    killer = psycopg.connect(
        **{k: v for k, v in params.items() if k in {"dbname", "user", "password", "host", "port"}},
        autocommit=True,
    )
    with killer:
        rows = killer.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return sum(1 for (ok,) in rows if ok)


def _wsgi_get(path: str, cookie: str) -> int:
    """GET through the WSGI application gunicorn runs, in this thread: status code."""
    environ: dict = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "HTTP_HOST": "testserver",
        "HTTP_COOKIE": cookie,
    }
    setup_testing_defaults(environ)
    statuses: list[str] = []
    body = get_wsgi_application()(environ, lambda status, headers: statuses.append(status))
    try:
        b"".join(body)
    finally:
        body.close()  # sends request_finished, as a WSGI server does
    return int(statuses[0].split()[0])


def _login_cookie(username: str) -> str:
    """A session cookie of a logged-in user, for requests made without the test client."""
    client = Client()
    client.force_login(make_user(username))
    return f"sessionid={client.cookies['sessionid'].value}"


def _stale_connection_then_request(cookie: str) -> int:
    """Open the connection, kill its backend from outside, then make a request that reads."""
    connection.ensure_connection()
    old_pid = connection.connection.info.backend_pid
    assert _terminate_other_backends() >= 1
    status = _wsgi_get("/", cookie)
    assert connection.connection is None or connection.connection.info.backend_pid != old_pid
    return status


# The test client disconnects Django's per-request connection check (close_old_connections), so
# these tests call the WSGI application directly: requests start and finish as under gunicorn,
# and the thread's connection persists between them (CONN_MAX_AGE), as in a worker thread.


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_first_request_after_a_database_restart_succeeds(settings):
    """With connection health checks, a killed connection is replaced before the request uses it."""
    settings.DEBUG = False
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True
    assert connection.settings_dict["CONN_MAX_AGE"] > 0
    cookie = _login_cookie("after-restart")
    try:
        for _ in range(2):  # twice: the replacement connection is persistent in its turn
            assert _stale_connection_then_request(cookie) == 200
    finally:
        connection.close()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_without_health_checks_the_stale_connection_fails_the_request(settings):
    """The failure the health checks prevent: the first request on a killed connection errors."""
    settings.DEBUG = False
    cookie = _login_cookie("no-checks")
    connection.close()
    connection.settings_dict["CONN_HEALTH_CHECKS"] = False
    try:
        assert _stale_connection_then_request(cookie) == 500
        # The failed request closed the broken connection: the next one works.
        assert _wsgi_get("/", cookie) == 200
    finally:
        connection.close()
        connection.settings_dict["CONN_HEALTH_CHECKS"] = True


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_a_quiet_persistent_connection_is_reused_without_the_select_1(settings, monkeypatch):
    """The health check costs no round trip while the server has not ended the connection."""
    settings.DEBUG = False
    cookie = _login_cookie("quiet")
    checks: list[bool] = []
    real = connection.is_usable

    def counted() -> bool:
        checks.append(True)
        return real()

    monkeypatch.setattr(connection, "is_usable", counted)
    try:
        assert _wsgi_get("/", cookie) == 200
        pid = connection.connection.info.backend_pid
        for _ in range(3):
            assert _wsgi_get("/", cookie) == 200
        assert connection.connection.info.backend_pid == pid  # the same connection, reused
        assert checks == []
        # A killed backend is still noticed: its socket is readable, so SELECT 1 runs.
        assert _terminate_other_backends() >= 1
        assert _wsgi_get("/", cookie) == 200
        assert checks == [True]
        assert connection.connection.info.backend_pid != pid
    finally:
        connection.close()
