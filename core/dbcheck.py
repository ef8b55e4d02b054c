"""The per-request connection health check without a round trip while the socket is quiet.

Django's CONN_HEALTH_CHECKS sends ``SELECT 1`` before the first query of every request on a
persistent connection: one round trip per request, the price of surviving a database restart.
A backend that ends (restart, ``pg_terminate_backend``, idle timeout) sends its FATAL message
and closes the socket, so an idle connection whose socket has nothing to read and whose libpq
status is OK has not been ended by the server. Such a connection passes the check at once; any
other gets Django's ``SELECT 1``, which replaces it when it fails.
"""

from __future__ import annotations

import select
from typing import Any

from django.db.backends.signals import connection_created


def quiet(raw: Any) -> bool:
    """Whether a psycopg connection is open, idle, and has nothing unread on its socket."""
    from psycopg import pq

    pgconn = raw.pgconn
    if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != pq.TransactionStatus.IDLE:
        return False
    poller = select.poll()
    poller.register(pgconn.socket, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


def _install(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Put the socket test in front of Django's check, once per PostgreSQL connection wrapper."""
    if connection.vendor != "postgresql" or getattr(connection, "_quiet_check", False):
        return
    django_check = connection.close_if_health_check_failed

    def close_if_health_check_failed() -> None:
        due = (
            connection.connection is not None
            and connection.health_check_enabled
            and not connection.health_check_done
            and not connection.pool
        )
        if due:
            try:
                passed = quiet(connection.connection)
            except Exception:  # anything odd: leave it to Django's SELECT 1
                passed = False
            if passed:
                connection.health_check_done = True
                return
        django_check()

    connection.close_if_health_check_failed = close_if_health_check_failed
    connection._quiet_check = True


def connect() -> None:
    """Install the socket test on every PostgreSQL connection as it opens."""
    connection_created.connect(_install, dispatch_uid="core.dbcheck")
