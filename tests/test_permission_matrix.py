"""Every URL pattern, every role: the exact answer to a GET and to an empty POST.

The patterns are enumerated from the resolver, so a new URL without an entry in ``MATRIX`` fails
``test_every_url_is_in_the_matrix``. Cells:

* a status (200, 302, 400, 401, 403, 404, 405), or ``LOGIN`` for a redirect to the login page;
* ``SKIP``: the role may act and an empty POST would change the world; the view's own tests
  cover what it does;
* ``Flag(now, want, why)``: today's answer looks wrong; the test expects ``want`` and is an
  expected failure while the answer is ``now`` (strict: once fixed, turn the cell into ``want``).

Roles: ``anonymous``; ``annotator`` (active member of project P, where every object lives);
``other_annotator`` (member of project Q only); ``no_role`` (logged in, no group); ``lead``.
API patterns add tokens: the lead's and the annotator's, scope ``read`` or ``predictions``, and
the lead's revoked token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.conftest import make_user
from tests.permission_world import SESSION_ROLES, TOKEN_ROLES, PermissionWorld, build_world

LOGIN = "login"
SKIP = "skip"


@dataclass(frozen=True)
class Flag:
    """A cell whose current answer ``now`` looks wrong; ``want`` is what it should be."""

    now: int | str
    want: int | str
    why: str


Cell = int | str | Flag
Row = dict[str, Cell]


def web(anonymous: Cell, annotator: Cell, other: Cell, no_role: Cell, lead: Cell) -> Row:
    """A row for a browser page: anonymous, P's annotator, Q's annotator, no role, lead."""
    return dict(zip(SESSION_ROLES, (anonymous, annotator, other, no_role, lead), strict=True))


def api(
    session: Row,
    lead_read: Cell,
    lead_pred: Cell,
    ann_read: Cell,
    ann_pred: Cell,
    revoked: Cell = 401,
) -> Row:
    """A row for an API endpoint: the session roles, then the tokens."""
    tokens = (lead_read, lead_pred, ann_read, ann_pred, revoked)
    return {**session, **dict(zip(TOKEN_ROLES, tokens, strict=True))}


@dataclass(frozen=True)
class Entry:
    """Expected answers to a GET and to an empty POST (``post_data`` instead when given)."""

    get: Row
    post: Row
    post_data: dict[str, Any] | None = None


# Rows used many times.
LEAD_PAGE = web(LOGIN, 403, 403, 403, 200)
LEAD_ACTION_GET = web(LOGIN, 403, 403, 403, 405)  # lead_required outside require_POST
LEAD_ACTION_POST = web(LOGIN, 403, 403, 403, SKIP)
LEAD_PAGE_POST = web(LOGIN, 403, 403, 403, 405)
MEMBER_PAGE = web(LOGIN, 200, 403, 403, 200)
API_401 = 401
API_MEMBER_GET = api(web(401, 200, 403, 403, 200), 200, 200, 200, 200)
API_GET_ONLY_POST = api(web(401, 405, 405, 405, 405), 405, 405, 405, 405)

MATRIX: dict[str, Entry] = {
    # --- annotation: projects, settings, jobs ---------------------------------------------
    "home": Entry(
        get=web(LOGIN, 200, 200, 200, 200),
        post=web(LOGIN, 405, 405, 405, 405),
    ),
    "project-detail": Entry(
        get=MEMBER_PAGE,
        post=web(LOGIN, 405, 405, 405, 405),
    ),
    "guidelines": Entry(get=MEMBER_PAGE, post=web(LOGIN, 405, 405, 405, 405)),
    "project-settings": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    "criterion-edit": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    # Empty posts: the form's errors, back to the settings page.
    "criterion-add": Entry(get=LEAD_ACTION_GET, post=web(LOGIN, 403, 403, 403, 302)),
    "criterion-move": Entry(get=LEAD_ACTION_GET, post=web(LOGIN, 403, 403, 403, 302)),
    "criterion-remove": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    # The job page is the lead's or its creator's (here the lead created it).
    "job-status": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    "job-cancel": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "job-retry": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "import-upload": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    "import-job": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    # --- annotation: members and slots --------------------------------------------------
    "members": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "member-add": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "member-remove": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "slot-reassign": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "project-new": Entry(get=LEAD_PAGE, post=web(LOGIN, 403, 403, 403, 200)),
    # Empty: the form's errors, back to the members page.
    "member-invite": Entry(get=LEAD_ACTION_GET, post=web(LOGIN, 403, 403, 403, 302)),
    # The world's member has a password: refused with a message, back to the members page.
    "member-invite-again": Entry(get=LEAD_ACTION_GET, post=web(LOGIN, 403, 403, 403, 302)),
    # A made-up token: the page says the link no longer works, whoever opens it.
    "invite-accept": Entry(get=web(200, 200, 200, 200, 200), post=web(200, 200, 200, 200, 200)),
    # --- annotation: labeling (annotators of the project only) --------------------------
    "label": Entry(
        get=web(LOGIN, 200, 403, 403, 403),
        # Empty: 400 before any membership check (no data is read). Well-formed ids of P:
        post=web(LOGIN, 422, 403, 403, 403),
        post_data={"sample_id": "{sample_id}", "criterion_id": "{criterion_id}", "choice": "A"},
    ),
    # No earlier vote: back to the label page, which then answers as above.
    "label-back": Entry(get=web(LOGIN, 302, 302, 302, 302), post=web(LOGIN, 405, 405, 405, 405)),
    # The annotator holds no slot of this item yet: not theirs to revisit.
    "label-item": Entry(get=web(LOGIN, 403, 403, 403, 403), post=web(LOGIN, 405, 405, 405, 405)),
    # The annotator of P holds no slot of this item (not calibrated): refused in place (422).
    "label-skip": Entry(
        get=web(LOGIN, 405, 405, 405, 405),
        post=web(LOGIN, 422, 403, 403, 403),
        post_data={"sample_id": "{sample_id}", "criterion_id": "{criterion_id}", "reason": "r"},
    ),
    "report-problem": Entry(
        get=web(LOGIN, 405, 405, 405, 405),
        post=web(LOGIN, SKIP, 403, 403, 403),
        post_data={"sample_id": "{sample_id}", "kind": "other"},
    ),
    "reports": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "report-close": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "calibration": Entry(get=MEMBER_PAGE, post=web(LOGIN, 405, 405, 405, 405)),
    "calibration-mark": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "calibration-round": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "reference-set": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    # --- aggregation ---------------------------------------------------------------------
    "aggregation-start": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "dashboard": Entry(get=LEAD_PAGE, post=web(LOGIN, 403, 403, 403, SKIP)),
    # require_GET sits outside lead_required here: a POST is 405 even for anonymous visitors.
    "review-queue": Entry(get=LEAD_PAGE, post=web(405, 405, 405, 405, 405)),
    "review-item": Entry(get=LEAD_PAGE, post=web(405, 405, 405, 405, 405)),
    "review-decide": Entry(get=web(405, 405, 405, 405, 405), post=LEAD_ACTION_POST),
    "review-mark": Entry(get=web(405, 405, 405, 405, 405), post=LEAD_ACTION_POST),
    "samples": Entry(get=LEAD_PAGE, post=web(405, 405, 405, 405, 405)),
    "sample-detail": Entry(get=LEAD_PAGE, post=web(405, 405, 405, 405, 405)),
    "annotator-votes": Entry(get=LEAD_PAGE, post=web(405, 405, 405, 405, 405)),
    "versions": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "version-build": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "version-detail": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "version-file": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "version-notes": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    "version-card": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "benchmark-import": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    "tokens": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    "token-revoke": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    # --- judging pages ---------------------------------------------------------------------
    "leaderboard": Entry(
        get=MEMBER_PAGE,
        post=web(LOGIN, 405, 405, 405, 405),
    ),
    "scorecard": Entry(
        get=MEMBER_PAGE,
        post=web(LOGIN, 405, 405, 405, 405),
    ),
    # The project's newest ready version's leaderboard (a redirect to it).
    "leaderboard-latest": Entry(
        get=web(LOGIN, 302, 403, 403, 302), post=web(LOGIN, 405, 405, 405, 405)
    ),
    "leaderboard-export": Entry(get=MEMBER_PAGE, post=web(LOGIN, 405, 405, 405, 405)),
    # The world's version holds labels only, whose rows members read (with votes: the lead's).
    "judge-compare": Entry(get=MEMBER_PAGE, post=web(LOGIN, 405, 405, 405, 405)),
    "predictions-upload": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    "predictions-upload-status": Entry(get=LEAD_PAGE, post=LEAD_ACTION_POST),
    "judge-run-delete": Entry(get=LEAD_ACTION_GET, post=LEAD_ACTION_POST),
    # An empty POST is a 400: no config chosen, nothing started.
    "judge-run-start": Entry(get=LEAD_ACTION_GET, post=web(LOGIN, 403, 403, 403, 400)),
    "judge-run-status": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    # A runner run's calls (the world's runner run; an uploaded run is a 404 even for the lead).
    "judge-run-calls": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    # An empty POST is an invalid form (400), which starts nothing.
    "judge-panel": Entry(get=LEAD_PAGE, post=web(LOGIN, 403, 403, 403, 400)),
    "judge-panel-job": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "judge-configs": Entry(get=LEAD_PAGE, post=web(LOGIN, 403, 403, 403, 400)),
    "judge-config-edit": Entry(get=LEAD_PAGE, post=web(LOGIN, 403, 403, 403, 400)),
    # --- REST API ------------------------------------------------------------------------
    # The list is filtered to the caller's projects: empty for Q's annotator and no role.
    "api-projects": Entry(
        get=api(web(401, 200, 200, 200, 200), 200, 200, 200, 200), post=API_GET_ONLY_POST
    ),
    "api-versions": Entry(get=API_MEMBER_GET, post=API_GET_ONLY_POST),
    "api-version": Entry(get=API_MEMBER_GET, post=API_GET_ONLY_POST),
    # The world's version holds labels only, which members read; rows and files of a version
    # with votes name annotators and are the lead's (every role and token of that case:
    # tests/aggregation/test_version_access.py).
    "api-version-rows": Entry(get=API_MEMBER_GET, post=API_GET_ONLY_POST),
    "api-version-file": Entry(get=API_MEMBER_GET, post=API_GET_ONLY_POST),
    "api-predictions-submit": Entry(
        get=api(web(401, 405, 405, 405, 405), 405, 405, 405, 405),
        # Empty body: past the permission checks it is a 400 (nothing to score).
        post=api(
            web(401, 403, 403, 403, 400),
            403,
            400,
            403,
            403,
        ),
    ),
    "api-scorecards": Entry(get=API_MEMBER_GET, post=API_GET_ONLY_POST),
    "api-scorecard": Entry(get=API_MEMBER_GET, post=API_GET_ONLY_POST),
    # Without ?a=&b=&split= a member's GET is a 400 naming the parameters.
    "api-judges-compare": Entry(
        get=api(web(401, 400, 403, 403, 400), 400, 400, 400, 400), post=API_GET_ONLY_POST
    ),
    # The schema and its docs page are public; a revoked token is refused even there.
    "api-schema": Entry(
        get=api(web(200, 200, 200, 200, 200), 200, 200, 200, 200),
        post=api(web(405, 405, 405, 405, 405), 405, 405, 405, 405),
    ),
    "api-docs": Entry(
        get=api(web(200, 200, 200, 200, 200), 200, 200, 200, 200),
        post=api(web(405, 405, 405, 405, 405), 405, 405, 405, 405),
    ),
    # --- curation: the lead's page, pair browser, decisions CSV, promotion, job card ----------
    # An empty POST is an invalid form (400), which starts nothing.
    "curation": Entry(get=LEAD_PAGE, post=web(LOGIN, 403, 403, 403, 400)),
    "curation-pairs": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "curation-decisions-csv": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    "curation-promote": Entry(get=LEAD_ACTION_GET, post=web(LOGIN, 403, 403, 403, 400)),
    "curation-job": Entry(get=LEAD_PAGE, post=LEAD_PAGE_POST),
    # --- accounts and media ------------------------------------------------------------------
    "login": Entry(get=web(200, 200, 200, 200, 200), post=web(200, 200, 200, 200, 200)),
    "logout": Entry(get=web(405, 405, 405, 405, 405), post=web(LOGIN, LOGIN, LOGIN, LOGIN, LOGIN)),
    # Browsers ask for /favicon.ico on every page, logged in or not: the SVG icon.
    "favicon": Entry(get=web(301, 301, 301, 301, 301), post=web(405, 405, 405, 405, 405)),
    # The health probes are public and say nothing of the data (core.health); GET only.
    "healthz": Entry(get=web(200, 200, 200, 200, 200), post=web(405, 405, 405, 405, 405)),
    "readyz": Entry(get=web(200, 200, 200, 200, 200), post=web(405, 405, 405, 405, 405)),
    # A web image of P (core.permissions.media_file decides; refusals are 404).
    "media": Entry(get=web(LOGIN, 200, 404, 404, 200), post=web(LOGIN, 405, 405, 405, 405)),
}

#: Which world object fills ``job_id`` for each pattern that has one.
JOB_FOR = {name: "import_job" for name in ("job-status", "job-cancel", "job-retry", "import-job")}
JOB_FOR["predictions-upload-status"] = "score_job"
JOB_FOR["judge-run-status"] = "runner_job"
JOB_FOR["curation-job"] = "curate_job"
JOB_FOR["judge-panel-job"] = "panel_job"
#: Which world object fills ``run_id`` where the uploaded run (``run_id``) does not fit.
RUN_FOR = {"judge-run-calls": "runner_run"}


def url_patterns(
    patterns: list[Any] | None = None, prefix: str = "", namespace: str = ""
) -> Iterator[tuple[str, str, URLPattern]]:
    """``(name, route, pattern)`` for every pattern, walking included resolvers."""
    for item in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(item, URLResolver):
            inner = f"{namespace}{item.namespace}:" if item.namespace else namespace
            yield from url_patterns(item.url_patterns, prefix + str(item.pattern), inner)
        else:
            yield namespace + (item.name or ""), prefix + str(item.pattern), item


def app_patterns() -> dict[str, URLPattern]:
    """The patterns the matrix covers: all but the admin site's (one rule covers those)."""
    return {
        name: pattern for name, route, pattern in url_patterns() if not route.startswith("admin/")
    }


def test_every_url_is_in_the_matrix():
    found = [(name, route) for name, route, _ in url_patterns() if not route.startswith("admin/")]
    unnamed = [route for name, route in found if not name]
    assert not unnamed, f"URL patterns without a name cannot be in the matrix: {unnamed}"
    names = {name for name, _ in found}
    assert len(names) == len(found), "two patterns share a name"
    assert not names - MATRIX.keys(), f"add these URLs to MATRIX: {sorted(names - MATRIX.keys())}"
    assert not MATRIX.keys() - names, f"stale MATRIX entries: {sorted(MATRIX.keys() - names)}"


def test_admin_patterns_are_all_under_the_admin_site():
    admin = [(name, route) for name, route, _ in url_patterns() if route.startswith("admin/")]
    assert admin and all(name.startswith("admin:") for name, _ in admin), admin


def _url(world: PermissionWorld, name: str, pattern: URLPattern) -> str:
    kwargs = {}
    for key in pattern.pattern.converters:
        if key == "job_id":
            kwargs[key] = world.kwargs[JOB_FOR[name]]
        elif key == "run_id" and name in RUN_FOR:
            kwargs[key] = world.kwargs[RUN_FOR[name]]
        else:
            kwargs[key] = world.kwargs[key]
    return reverse(name, kwargs=kwargs)


def _client(world: PermissionWorld, role: str) -> tuple[Client, dict[str, str]]:
    client = Client()
    if role in TOKEN_ROLES:
        return client, {"HTTP_AUTHORIZATION": f"Token {world.keys[role]}"}
    if world.users[role] is not None:
        client.force_login(world.users[role])
    return client, {}


def _outcome(response: Any) -> int | str:
    if response.status_code == 302 and response["Location"].startswith("/accounts/login/"):
        return LOGIN
    return response.status_code


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(MATRIX))
def test_matrix(name):
    patterns = app_patterns()
    if name not in patterns:
        pytest.fail(f"{name} is in MATRIX but no URL pattern has that name")
    world = build_world()
    url = _url(world, name, patterns[name])
    entry = MATRIX[name]
    is_api = url.startswith("/api/")
    wrong, flagged, fixed = [], [], []
    for method, row in (("GET", entry.get), ("POST", entry.post)):
        expected_roles = set(SESSION_ROLES) | (set(TOKEN_ROLES) if is_api else set())
        assert set(row) == expected_roles, f"{name} {method}: the row's roles"
        data = {k: v.format(**world.kwargs) for k, v in (entry.post_data or {}).items()}
        for role, cell in row.items():
            if cell == SKIP:
                continue
            client, extra = _client(world, role)
            if method == "GET":
                response = client.get(url, **extra)
            else:
                response = client.post(url, data, **extra)
            got = _outcome(response)
            assert response.status_code != 500, (name, method, role)
            if isinstance(cell, Flag):
                if got == cell.want:
                    fixed.append(f"{method} {role}: now {got}; write {got!r} in the matrix")
                elif got == cell.now:
                    flagged.append(f"{method} {role}: {cell.why}")
                else:
                    wrong.append(f"{method} {role}: expected {cell.now} (flagged), got {got}")
            elif got != cell:
                wrong.append(f"{method} {role}: expected {cell}, got {got}")
    assert not wrong, f"{name} ({url}):\n" + "\n".join(wrong)
    assert not fixed, f"{name}: a flagged cell is fixed:\n" + "\n".join(fixed)
    if flagged:
        pytest.xfail(f"{name}: " + "; ".join(flagged))


@pytest.mark.django_db
def test_tokens_do_not_open_web_pages_or_media():
    """A token is an API credential only: web pages and media treat its bearer as anonymous."""
    world = build_world()
    patterns = app_patterns()
    for name in ("project-detail", "versions", "version-file", "media"):
        url = _url(world, name, patterns[name])
        for role in TOKEN_ROLES:
            client, extra = _client(world, role)
            assert _outcome(client.get(url, **extra)) == LOGIN, (name, role)


@pytest.mark.django_db
def test_admin_site_is_staff_only():
    """One rule for every admin pattern: only staff get past the admin login."""
    world = build_world()
    staff = make_user("matrix-staff")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    urls = (
        "/admin/",
        "/admin/auth/",
        "/admin/auth/user/",
        "/admin/auth/user/add/",
        f"/admin/auth/user/{world.users['annotator'].pk}/change/",
        "/admin/annotation/project/",
    )
    for role in SESSION_ROLES:
        client, _ = _client(world, role)
        for url in urls:
            response = client.get(url)
            assert response.status_code == 302, (role, url)
            assert response["Location"].startswith("/admin/login/"), (role, url)
    client = Client()
    client.force_login(staff)
    for url in urls:
        assert client.get(url).status_code == 200, url


# --- probing ids -------------------------------------------------------------------------------
#: The URL parts that name an object (or a judge, a user, a file): answers must not tell an
#: outsider whether it exists.
ID_KEYS = frozenset(
    {
        "sample_id",
        "criterion_id",
        "member_id",
        "slot_id",
        "run_id",
        "pk",
        "job_id",
        "report_id",
        "user_id",
        "config_id",
        "number",
        "judge",
        "path",
        "uidb64",
    }
)
#: Ids a page reads from its query string: ``{pattern: {parameter: world key}}``.
QUERY_IDS = {
    "label-back": {"sample": "sample_id", "criterion": "criterion_id"},
    **{
        name: {"job": "score_job"}
        for name in (
            "import-upload",
            "benchmark-import",
            "predictions-upload",
            "leaderboard",
            "judge-panel",
            "curation",
        )
    },
}
#: Who probes: nobody, a user of no project, Q's annotator (by session and by API key).
OUTSIDERS = ("anonymous", "no_role", "other_annotator", "tok_other_read")
_CSRF = re.compile(r'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')


def _id_keys(name: str, pattern: URLPattern) -> set[str]:
    form = {k for k, v in (MATRIX[name].post_data or {}).items() if "{" in v}
    return (set(pattern.pattern.converters) | form) & ID_KEYS | set(QUERY_IDS.get(name, {}))


def _probed_patterns() -> list[str]:
    """The patterns naming an object (one missing from MATRIX fails the test above)."""
    patterns = app_patterns()
    return sorted(
        name for name in MATRIX.keys() & patterns.keys() if _id_keys(name, patterns[name])
    )


def _probe(
    world: PermissionWorld, name: str, method: str, role: str, slug: str, ids: dict[str, Any]
) -> tuple[int, str, str]:
    """The answer to ``method`` on pattern ``name`` naming ``ids``: status, body and Location,
    with the address itself and the per-request CSRF token blanked."""
    values = {**ids, "slug": slug}
    url = _url(replace(world, kwargs=values), name, app_patterns()[name])
    query = {param: values[key] for param, key in QUERY_IDS.get(name, {}).items()}
    if role in SESSION_ROLES:
        client, extra = _client(world, role)
    else:
        client, extra = Client(), {"HTTP_AUTHORIZATION": f"Token {world.keys[role]}"}
    if method == "GET":
        response = client.get(url, query, **extra)
    else:
        data = {k: str(v).format(**values) for k, v in (MATRIX[name].post_data or {}).items()}
        response = client.post(url, data, **extra)
    assert response.status_code != 500, (name, method, role, url)
    body = b"".join(response) if response.streaming else response.content
    text = _CSRF.sub(r"\1-", body.decode("utf-8", "replace"))
    location = response.get("Location", "")
    full = response.wsgi_request.get_full_path()
    for shown in (full, quote(full, safe=""), quote(full, safe="/"), url, quote(url, safe="")):
        text, location = text.replace(shown, "<url>"), location.replace(shown, "<url>")
    return response.status_code, text, location


@pytest.mark.django_db
@pytest.mark.parametrize("name", _probed_patterns())
def test_an_outsider_cannot_tell_which_ids_exist(name):
    """For every URL naming an object: project P's object and an id naming nothing get the same
    status, body and redirect, asked by an outsider through P's address and by Q's annotator
    through Q's (the permission is decided before the object is looked up)."""
    world = build_world()
    is_api = reverse("api-projects") in _url(world, name, app_patterns()[name])
    has_slug = "slug" in app_patterns()[name].pattern.converters
    slugs = (world.p.slug, world.q.slug) if has_slug else ("",)
    differ = []
    for role in OUTSIDERS:
        if role.startswith("tok_") and not is_api:
            continue
        for slug in slugs:
            for method in ("GET", "POST"):
                seen = _probe(world, name, method, role, slug, world.kwargs)
                blank = _probe(world, name, method, role, slug, world.missing)
                if seen != blank:
                    differ.append(
                        f"{method} {role} via {slug or 'no project'}: "
                        f"{seen[0]} {seen[2]} vs {blank[0]} {blank[2]}\n"
                        f"  existing: {seen[1][:300]!r}\n  missing:  {blank[1][:300]!r}"
                    )
    assert not differ, f"{name} tells which ids exist:\n" + "\n".join(differ)
