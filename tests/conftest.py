"""Fixtures shared by the whole suite: named users, a project with default criteria, samples."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache

from annotation.models import Project, Sample
from annotation.services.projects import member_add, project_create
from config import celery_app
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP

# The real-worker fixture (``celery_worker``) for the tests marked ``celery_worker``.
pytest_plugins = ["tests.celery_worker"]

# The SQLite lane (`make test-sqlite`) runs the suite on the embedded default. These tests check
# what only PostgreSQL does, so they are skipped on SQLite, each with the reason.
POSTGRES_ONLY = {
    "tests/core/test_jobs_lease.py::test_the_heartbeat_keeps_a_silent_job_its_own": (
        "the heartbeat thread writes through a second connection; SQLite has one writer at a "
        "time, so there the job row is written on the work's connection"
    ),
    "tests/core/test_jobs_lease.py::test_a_cancel_stops_the_work_and_rolls_it_back": (
        "a cancel committed while the work's transaction is open needs row locks: "
        "on SQLite the cancel waits for the work's write lock"
    ),
}


def pytest_collection_modifyitems(config, items):
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        return
    for item in items:
        reason = POSTGRES_ONLY.get(item.nodeid)
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"PostgreSQL only: {reason}"))


@pytest.fixture(autouse=True)
def _celery_eager():
    """Run tasks in-process unless a test starts a real worker (see tests/celery_worker.py)."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Test users need no strong hashing; it would dominate the suite's time otherwise."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _private_servers_allowed(settings):
    """The fake judge servers listen on 127.0.0.1: loopback and private addresses are allowed
    (the worker processes get OUTBOUND_ALLOW_PRIVATE=1 from tests/celery_worker.py)."""
    settings.OUTBOUND_ALLOW_PRIVATE = True


@pytest.fixture(autouse=True)
def _empty_cache():
    """API throttle counts live in the cache: each test starts with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _media_root(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"


def make_user(username: str, *groups: str, password: str = "pw-for-tests") -> User:
    user = User.objects.create_user(username=username, password=password)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


@pytest.fixture
def lead(db) -> User:
    return make_user("lead", LEAD_GROUP)


@pytest.fixture
def annotator(db) -> User:
    return make_user("ann1", ANNOTATOR_GROUP)


@pytest.fixture
def outsider(db) -> User:
    """A logged-in user with no role."""
    return make_user("outsider")


@pytest.fixture
def project(db) -> Project:
    return project_create(name="Test project", slug="test-project")


@pytest.fixture
def annotators(db, project) -> list[User]:
    users = [make_user(f"ann{i}", ANNOTATOR_GROUP) for i in range(1, 10)]
    for user in users:
        member_add(project=project, user=user)
    return users


def make_sample(
    project: Project, external_id: str, *, split: str = "open_ended", **fields
) -> Sample:
    defaults = {
        "question": f"Describe the image {external_id}.",
        "response_a": "A concise answer.",
        "response_b": "A longer, more detailed answer.",
        "model_a": "model-x",
        "model_b": "model-y",
    }
    defaults.update(fields)
    return Sample.objects.create(project=project, external_id=external_id, split=split, **defaults)
