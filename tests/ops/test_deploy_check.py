"""`manage.py check --deploy` passes with the documented production and docker-compose settings."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent

# The production environment README "Deploying" documents.
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": secrets.token_urlsafe(60),
    "ALLOWED_HOSTS": "studio.example.org",
    "BEHIND_PROXY": "1",
    "DATABASE_URL": "postgres://multicrit:secret@db.internal:5432/multicrit",
    "CELERY_BROKER_URL": "redis://redis.internal:6379/0",
    "CACHE_URL": "redis://redis.internal:6379/1",
}
# Everything the settings (or the deploy check) read, removed from the inherited environment.
SETTINGS_VARIABLES = {
    "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "BEHIND_PROXY",
    "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL", "REDIS_URL",
    "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "MEDIA_ROOT",
    "DJANGO_SETTINGS_MODULE",
    # Set by the browser tests in this process; a deployment never has it (check --deploy W018).
    "DJANGO_ALLOW_ASYNC_UNSAFE",
}  # fmt: skip


def run(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a Python command in the project with exactly the given settings environment."""
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    clean.update({"VAR_DIR": str(tmp_path / "var"), "MEDIA_ROOT": str(tmp_path / "media")})
    clean.update(env)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def check_deploy(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], env, tmp_path)


def test_documented_production_settings_pass_the_deploy_check(tmp_path):
    result = check_deploy(PRODUCTION, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output and "security.W" not in output


def test_hsts_preload_opt_in_also_passes(tmp_path):
    result = check_deploy({**PRODUCTION, "SECURE_HSTS_PRELOAD": "1"}, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_turning_https_off_is_reported(tmp_path):
    insecure = {
        **PRODUCTION,
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
    }
    result = check_deploy(insecure, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    for code in ("W004", "W008", "W012", "W016"):
        assert f"security.{code}" in output


def compose_environment() -> dict[str, str]:
    """The web service's environment in docker-compose.yml, with the shell defaults applied."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    given = {"SECRET_KEY": secrets.token_urlsafe(60)}  # the one value compose requires

    def expand(value: str) -> str:
        def one(match: re.Match[str]) -> str:
            name, op, default = match[1], match[2], match[3] or ""
            if name in given:
                return given[name]
            assert op != ":?", f"compose requires {name}"
            return default

        return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value)

    return {k: expand(str(v)) for k, v in compose["services"]["web"]["environment"].items()}


def test_docker_compose_environment_passes_the_deploy_check(tmp_path):
    env = compose_environment()
    assert env["DEBUG"] == "0" and len(env["SECRET_KEY"]) >= 50
    assert env["CACHE_URL"].startswith("redis://")
    result = check_deploy(env, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "security.W" not in output


PROBE = (
    "import json, django; from django.conf import settings; django.setup();"
    "print(json.dumps({n: getattr(settings, n, None) for n in ("
    "'SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE',"
    " 'SECURE_PROXY_SSL_HEADER', 'X_FRAME_OPTIONS', 'SECURE_REFERRER_POLICY')}))"
)


def test_embedded_demo_keeps_plain_http(tmp_path):
    """DEBUG on (no environment): no HTTPS redirect, no HSTS, cookies over http://127.0.0.1."""
    result = run(["-c", PROBE], {"DJANGO_SETTINGS_MODULE": "config.settings"}, tmp_path)
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert not values["SECURE_SSL_REDIRECT"] and not values["SECURE_HSTS_SECONDS"]
    assert not values["SESSION_COOKIE_SECURE"] and not values["CSRF_COOKIE_SECURE"]
    assert values["SECURE_PROXY_SSL_HEADER"] is None
    assert values["X_FRAME_OPTIONS"] == "DENY"
    assert values["SECURE_REFERRER_POLICY"] == "same-origin"


def test_forwarded_proto_trusted_only_behind_a_proxy(tmp_path):
    env = {**PRODUCTION, "DJANGO_SETTINGS_MODULE": "config.settings"}
    behind = json.loads(run(["-c", PROBE], env, tmp_path).stdout)
    assert behind["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    env.pop("BEHIND_PROXY")
    direct = json.loads(run(["-c", PROBE], env, tmp_path).stdout)
    assert direct["SECURE_PROXY_SSL_HEADER"] is None
    assert direct["SECURE_SSL_REDIRECT"] is True and direct["SECURE_HSTS_SECONDS"] == 31536000
