"""How the database is copied out and back: one strategy per database engine, chosen in one place.

:data:`STRATEGIES` maps Django's ``connection.vendor`` to its strategy. Each one gives:

- ``snapshot()``: a context in which Django's connection reads exactly the state ``dump()``
  writes, so the manifest's row counts and checksums describe the dump;
- ``dump(target)`` and ``restore(source, replace=...)``;
- ``is_empty()``: whether the configured database has no tables yet.

PostgreSQL runs ``pg_dump --format=custom`` in the snapshot exported by a repeatable-read
transaction, and ``pg_restore`` in a single transaction. The connection settings come from
Django's DATABASES; the password reaches the child process in its environment (PGPASSWORD)
only, never in its arguments or in any output. SQLite copies the file with sqlite3's backup
API while Django's connection holds the write lock (the settings begin every transaction
IMMEDIATE), so no write lands between the counts and the copy.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, ClassVar

from django.db import transaction

from .manifest import BackupRefused

#: Connection OPTIONS of Django's PostgreSQL settings that libpq also reads from the environment.
LIBPQ_ENVIRONMENT = {
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "service": "PGSERVICE",
    "passfile": "PGPASSFILE",
}


class BackupFailed(Exception):
    """A dump or restore program failed; its own error message is attached."""


class DatabaseStrategy(ABC):
    name: ClassVar[str]
    dump_name: ClassVar[str]
    description: ClassVar[str]

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    @abstractmethod
    @contextmanager
    def snapshot(self) -> Iterator[None]: ...

    @abstractmethod
    def dump(self, target: Path) -> None: ...

    @abstractmethod
    def restore(self, source: Path, *, replace: bool) -> None: ...

    def is_empty(self) -> bool:
        with self.connection.cursor() as cursor:
            return not self.connection.introspection.table_names(cursor)

    def _outside_transaction(self) -> None:
        if self.connection.in_atomic_block:
            raise BackupRefused("a backup must be taken outside any open transaction")


class PostgresStrategy(DatabaseStrategy):
    name = "postgresql"
    dump_name = "database.dump"
    description = "PostgreSQL custom-format dump"

    def __init__(self, connection: Any) -> None:
        super().__init__(connection)
        self._snapshot_id: str | None = None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        self._outside_transaction()
        with transaction.atomic(using=self.connection.alias):
            with self.connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                cursor.execute("SELECT pg_export_snapshot()")
                self._snapshot_id = cursor.fetchone()[0]
            try:
                yield
            finally:
                self._snapshot_id = None

    def dump(self, target: Path) -> None:
        snapshot = ["--snapshot", self._snapshot_id] if self._snapshot_id else []
        self._run(["pg_dump", "--format=custom", "--file", str(target), *snapshot, *self._target()])
        os.chmod(target, 0o600)

    def restore(self, source: Path, *, replace: bool) -> None:
        self.connection.close()
        clean = ["--clean", "--if-exists"] if replace else []
        self._run(
            [
                "pg_restore",
                "--no-owner",
                "--no-acl",
                "--exit-on-error",
                "--single-transaction",
                *clean,
                *self._target(),
                str(source),
            ]
        )

    def _target(self) -> list[str]:
        """The connection arguments: host, port, user and database; never the password."""
        settings = self.connection.settings_dict
        args = ["--no-password"]
        for flag, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
            if settings.get(key):
                args += [flag, str(settings[key])]
        return [*args, "--dbname", str(settings["NAME"])]

    def _environment(self) -> dict[str, str]:
        settings = self.connection.settings_dict
        env = dict(os.environ)
        if settings.get("PASSWORD"):
            env["PGPASSWORD"] = str(settings["PASSWORD"])
        options = settings.get("OPTIONS") or {}
        env.update(
            {var: str(options[key]) for key, var in LIBPQ_ENVIRONMENT.items() if key in options}
        )
        return env

    def _run(self, argv: list[str]) -> None:
        try:
            result = subprocess.run(
                argv, env=self._environment(), capture_output=True, text=True, check=False
            )
        except FileNotFoundError:
            raise BackupFailed(f"{argv[0]} is not installed (or not on PATH)") from None
        if result.returncode != 0:
            raise BackupFailed(
                f"{argv[0]} failed (exit {result.returncode}): {result.stderr.strip()}"
            )


class SqliteStrategy(DatabaseStrategy):
    name = "sqlite"
    dump_name = "database.sqlite3"
    description = "SQLite database copy"

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        self._outside_transaction()
        # BEGIN IMMEDIATE (the settings' transaction mode): the write lock is held until the end,
        # readers (the backup's own connection) go on.
        with transaction.atomic(using=self.connection.alias):
            yield

    def dump(self, target: Path) -> None:
        with (
            closing(sqlite3.connect(self._path(), timeout=30)) as source,
            closing(sqlite3.connect(target)) as copy,
        ):
            source.backup(copy)
            # A self-contained file: no write-ahead log beside it when it is opened later.
            copy.execute("PRAGMA journal_mode=DELETE")
        os.chmod(target, 0o600)

    def restore(self, source: Path, *, replace: bool) -> None:
        self.connection.close()
        path = self._path()
        path.parent.mkdir(parents=True, exist_ok=True)
        read_only = f"{source.resolve().as_uri()}?mode=ro"
        with (
            closing(sqlite3.connect(read_only, uri=True)) as backup,
            closing(sqlite3.connect(path, timeout=30)) as database,
        ):
            backup.backup(database)

    def _path(self) -> Path:
        return Path(self.connection.settings_dict["NAME"])


#: The one registry: Django's ``connection.vendor`` -> its strategy.
STRATEGIES: dict[str, type[DatabaseStrategy]] = {
    PostgresStrategy.name: PostgresStrategy,
    SqliteStrategy.name: SqliteStrategy,
}


def strategy_for(connection: Any) -> DatabaseStrategy:
    strategy = STRATEGIES.get(connection.vendor)
    if strategy is None:
        raise BackupRefused(
            f"no backup strategy for {connection.vendor}; known: {', '.join(STRATEGIES)}"
        )
    return strategy(connection)
