"""The settings module switches databases and the broker from the environment alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = (
    "import json, django; from django.conf import settings; django.setup();"
    "db = settings.DATABASES['default'];"
    "print(json.dumps({'engine': db['ENGINE'], 'name': str(db['NAME']),"
    " 'eager': settings.CELERY_TASK_ALWAYS_EAGER, 'broker': settings.CELERY_BROKER_URL,"
    " 'debug': settings.DEBUG, 'hosts': settings.ALLOWED_HOSTS, 'media': str(settings.MEDIA_ROOT),"
    " 'key_len': len(settings.SECRET_KEY)}))"
)


def probe(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "SECRET_KEY",
            "DEBUG",
            "ALLOWED_HOSTS",
            "MEDIA_ROOT",
        }
    }
    clean.update({"DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(tmp_path / "var")})
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True
    )


def test_embedded_default_is_sqlite_and_eager(tmp_path):
    result = probe({}, tmp_path)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["engine"] == "django.db.backends.sqlite3"
    assert figures["name"] == str(tmp_path / "var" / "db.sqlite3")
    assert figures["eager"] is True
    assert figures["debug"] is True
    assert figures["key_len"] >= 50
    # The generated development key is kept, so sessions survive a restart.
    again = json.loads(probe({}, tmp_path).stdout)
    assert (tmp_path / "var" / "dev-secret-key").read_text().strip()
    assert again["key_len"] == figures["key_len"]


def test_postgres_and_redis_from_environment(tmp_path):
    env = {
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/somedb",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/3",
        "ALLOWED_HOSTS": "studio.example.org, other.example.org",
        "MEDIA_ROOT": str(tmp_path / "media"),
    }
    figures = json.loads(probe(env, tmp_path).stdout)
    assert figures["engine"] == "django.db.backends.postgresql"
    assert figures["name"] == "somedb"
    assert figures["eager"] is False
    assert figures["broker"] == "redis://127.0.0.1:6379/3"
    assert figures["hosts"] == ["studio.example.org", "other.example.org"]
    assert figures["media"] == str(tmp_path / "media")


def test_secret_key_required_without_debug(tmp_path):
    result = probe({"DEBUG": "false"}, tmp_path)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
    ok = probe({"DEBUG": "false", "SECRET_KEY": "x" * 60}, tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["debug"] is False
