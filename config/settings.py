"""Settings for Multi-Crit Studio, read from the environment.

With no environment set the app runs embedded: SQLite under ``var/``, Celery tasks eagerly
in-process, DEBUG on with a generated development key. ``DATABASE_URL`` and
``CELERY_BROKER_URL`` switch to PostgreSQL and Redis; nothing else changes.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean environment variable ("1", "true", "yes", "on" are true)."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    key_file = VAR_DIR / "dev-secret-key"
    if key_file.exists():
        SECRET_KEY = key_file.read_text().strip()
    else:
        SECRET_KEY = secrets.token_urlsafe(50)
        try:
            VAR_DIR.mkdir(parents=True, exist_ok=True)
            key_file.write_text(SECRET_KEY)
        except OSError:
            pass

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "core",
    "annotation",
    "aggregation",
    "judging",
    "curation",
    "demo",
]

MIDDLEWARE = [
    # /healthz and /readyz, answered before the HTTPS redirect and the host check (core.health).
    "core.middleware.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.csp.ContentSecurityPolicyMiddleware",
    "config.request_guard.RequestGuardMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

# Scripts and styles only from our own files; see config/csp.py (the API docs page is wider).
CONTENT_SECURITY_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "font-src": "'self'",
    "img-src": "'self' data: blob:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "frame-ancestors": "'none'",
    "form-action": "'self'",
}

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.context_processors.roles",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
SQLITE_PATH = VAR_DIR / "db.sqlite3"
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # Connections are kept between requests (CONN_MAX_AGE) and checked before their first use
    # in each request or task (CONN_HEALTH_CHECKS): after a database restart a stale connection
    # is replaced instead of failing the request that finds it. The check costs no round trip
    # while the connection's socket is quiet (core.dbcheck): a server that ended it has written
    # to it.
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL,
            conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
            conn_health_checks=True,
        )
    }
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": SQLITE_PATH}}

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The labeling loop's hot statements are prepared once per connection (core.db.
    # prepared_cursor); every other query keeps Django's client-side binding and is never
    # prepared. DB_PREPARED_STATEMENTS=0 turns preparing off (a pooler in transaction mode).
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = (
        5 if env_bool("DB_PREPARED_STATEMENTS", True) else None
    )

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Writers queue on the database lock instead of failing at once, and every transaction takes
    # the write lock when it begins, so a read-then-write never deadlocks on a lock upgrade.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# How long an annotator's invite link (and a password-reset link) stays valid.
PASSWORD_RESET_TIMEOUT = int(os.environ.get("INVITE_TIMEOUT_HOURS", "72")) * 3600
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Login throttling (django-axes) ---------------------------------------------------------
# Failed logins are counted per username (whatever the address: one account tried from many
# addresses) and per client address (whatever the username: one address trying many accounts);
# either count reaching the limit within the cool-off window locks that key until the window
# has passed. To unlock early: a staff user in the admin (Axes > Access attempts), or on the
# server ``manage.py axes_reset_username NAME`` / ``axes_reset_ip ADDRESS`` / ``axes_reset``.
INSTALLED_APPS += ["axes"]
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]  # last, as django-axes requires
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # ModelBackend that also reads the user's role groups in the same query (core.backends).
    "core.backends.RoleModelBackend",
]
AXES_ENABLED = env_bool("LOGIN_THROTTLE", True)
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "10"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
# The client address is the connection's peer, unless the app is reachable only through a
# reverse proxy (BEHIND_PROXY): then it is the last X-Forwarded-For entry, the one the proxy
# appended. Trusting the header without such a proxy would let any client pick its address.
BEHIND_PROXY = env_bool("BEHIND_PROXY", False)
if BEHIND_PROXY:
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    AXES_IPWARE_PROXY_ORDER = "right-most"
else:
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)

# --- I18N -----------------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# --- Static and media -----------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
# How allowed media files leave: "django" streams them, "x-accel" / "x-sendfile" hand them to the
# proxy (an internal location serving MEDIA_ROOT under MEDIA_ACCEL_PREFIX). See core.media.
MEDIA_SERVE = os.environ.get("MEDIA_SERVE", "django")
MEDIA_ACCEL_PREFIX = os.environ.get("MEDIA_ACCEL_PREFIX", "/protected-media/")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve static files from the app folders too, so gunicorn works without collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- Request size limits --------------------------------------------------------------------
# config.request_guard answers 413 (with the limit in the message) above these, before reading
# the body. Field limits of the data itself (samples, votes, predictions) are in
# annotation/importing/limits.py.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024  # any body but a multipart upload
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024  # larger uploaded files go to a temporary file
UPLOAD_MAX_BYTES = int(os.environ.get("UPLOAD_MAX_MB", "100")) * 1024 * 1024  # one upload

# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "") or None
# With no broker the tasks run eagerly in-process: the embedded demo needs nothing installed.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"
# A task is acknowledged when it ends and given back when its worker dies, so a killed worker's
# job is delivered again (core/jobs.py: the job's lease makes that safe).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# One job at a time per worker process; more jobs at once take more worker processes. A worker
# whose broker connection drops while it holds a running job's message and still waits for the
# next one (two pool processes, one busy) exits: closing the dead connection, kombu tries to give
# the message back through it and fails ("'NoneType' object has no attribute 'hostname'",
# "Unrecoverable error"). With one process it never waits while it holds a message.
CELERY_WORKER_CONCURRENCY = 1
# A running job goes on through a broker outage (it needs only the database); its late ack is
# lost with the connection, and a redelivered message finds the job finished and does nothing.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Redis gives an unacknowledged message to another worker after the visibility timeout: the
# delay before a whole killed worker's task comes back by itself (the jobs-sweep beat entry
# re-sends it sooner, after JOB_LEASE_SECONDS). A job running longer than this is delivered a
# second time, which finds it claimed and does nothing.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "900")),
    "socket_connect_timeout": 3,
}
# Starting a job publishes without retries and answers "the job queue is unavailable" fast.
CELERY_BROKER_CONNECTION_TIMEOUT = 3
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BEAT_SCHEDULE = {
    "reclaim-expired-leases": {
        "task": "annotation.tasks.reclaim_expired_leases",
        "schedule": 300.0,
    },
    "jobs-sweep": {
        "task": "core.jobs_sweep",
        "schedule": float(os.environ.get("JOB_SWEEP_SECONDS", "60")),
    },
    # A worker notes the time it ran this (core.health): /readyz and the lead's dashboard say
    # when none has been seen for WORKER_SEEN_SECONDS. One that waited behind a job expires.
    "worker-heartbeat": {
        "task": "core.worker_heartbeat",
        "schedule": float(os.environ.get("WORKER_HEARTBEAT_SECONDS", "30")),
        "options": {"expires": float(os.environ.get("WORKER_HEARTBEAT_SECONDS", "30"))},
    },
}
WORKER_SEEN_SECONDS = float(os.environ.get("WORKER_SEEN_SECONDS", "120"))

# --- Background jobs (core/jobs.py) ---------------------------------------------------------
# A running job's worker refreshes its heartbeat every third of the lease; a job whose heartbeat
# is older than the lease lost its worker and is run again, up to JOB_MAX_ATTEMPTS times.
JOB_LEASE_SECONDS = float(os.environ.get("JOB_LEASE_SECONDS", "60"))
JOB_MAX_ATTEMPTS = int(os.environ.get("JOB_MAX_ATTEMPTS", "3"))
# A job still queued after this long (its message lost) is sent again by the sweep.
JOB_QUEUED_RESEND_SECONDS = float(os.environ.get("JOB_QUEUED_RESEND_SECONDS", "300"))
# Test-only: every progress call of a job sleeps this long, so tests can stop a worker mid-job.
JOB_TEST_DELAY_SECONDS = float(os.environ.get("JOB_TEST_DELAY_SECONDS", "0"))

# --- Outbound requests (core/outbound.py) ---------------------------------------------------
# Servers whose address a lead types in (judge servers) are reached at public addresses only;
# 1 also allows private and loopback ones (a model server on the same network or machine).
# Link-local and cloud metadata addresses are refused either way.
OUTBOUND_ALLOW_PRIVATE = env_bool("OUTBOUND_ALLOW_PRIVATE", False)
# The environment variables a judge's API key may be read from: names starting with one of the
# prefixes, or one of the names (both comma-separated).
OUTBOUND_KEY_ENV_PREFIXES = tuple(env_list("JUDGE_KEY_ENV_PREFIXES", ["JUDGE_KEY_"]))
OUTBOUND_KEY_ENV_NAMES = tuple(env_list("JUDGE_KEY_ENV_NAMES", []))

# --- REST API -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "core.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
}
# API throttles: per user for token and session clients, per address for anonymous requests.
# Over the rate the API answers 429 with a Retry-After header. The counts live in the cache.
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = [
    "rest_framework.throttling.UserRateThrottle",
    "rest_framework.throttling.AnonRateThrottle",
]
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "user": os.environ.get("API_THROTTLE_USER", "5000/hour"),
    "anon": os.environ.get("API_THROTTLE_ANON", "300/hour"),
}
REST_FRAMEWORK["NUM_PROXIES"] = 1 if BEHIND_PROXY else 0

# --- Cache ----------------------------------------------------------------------------------
# Throttle counts must be shared by every web process: Redis when CACHE_URL (or REDIS_URL) is
# set, else a per-process memory cache, enough for the single-process embedded demo. While Redis
# cannot be reached the cache answers as empty (core.cache): pages keep working, sessions are
# read from the database, throttles count nothing; a dead Redis costs a request one second at
# most, and each process tries it again every few seconds.
CACHE_URL = os.environ.get("CACHE_URL", "") or os.environ.get("REDIS_URL", "")
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "core.cache.DegradingRedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "multicrit",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    # Sessions are read from the shared cache (written through to the database): one query
    # less on every page. Not with the per-process cache: a logout seen by one web process
    # would leave the session alive in the others' memory.
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

SPECTACULAR_SETTINGS = {
    "TITLE": "Multi-Crit Studio API",
    "DESCRIPTION": "Dataset versions, rows and files; judge predictions and scorecards.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page's Swagger UI is served from the installed sidecar package, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every API operation documents the errors it can give (400/401/403/404/413/429).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "aggregation.api.schema.add_common_errors",
    ],
}

# --- Security when deployed -----------------------------------------------------------------
# With DEBUG off the site is assumed to be served over HTTPS: plain HTTP is redirected, browsers
# are told to use HTTPS only (HSTS), and cookies are sent only over HTTPS. Each can be turned
# off from the environment, which `manage.py check --deploy` then reports. The embedded demo
# (DEBUG on, plain http://127.0.0.1) keeps Django's development defaults.
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    # Preloading commits the domain and all its subdomains to HTTPS in browsers for months, and
    # anyone may submit a domain whose header carries the directive: opt in, never by default.
    # Left off deliberately, the deploy check's reminder about it (W021) is silenced.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
# A TLS-terminating proxy tells the app the original scheme; trusted only when BEHIND_PROXY
# says the app is reachable through that proxy alone (the proxy must set the header itself).
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = os.environ.get("SECURE_REFERRER_POLICY", "same-origin")
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
