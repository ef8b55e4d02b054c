"""The API answers as its OpenAPI schema says: schemathesis against the WSGI app, bounded.

Every operation of /api/schema/ gets generated requests (path, query, headers, bodies), half of
them aimed at a real project, version and scorecard, each sent with a real token of one scope
(read, predictions), a revoked one or none. Checks: no 500, every status code documented,
every body and content type as documented.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from annotation.services.projects import member_add
from core.models import ApiToken
from judging.services import scoring as services
from tests.conftest import make_user
from tests.judging.web_data import make_token, make_version, predictions_upload

WHO = ["lead-read", "lead-predictions", "member-read", "member-predictions", "revoked", "none"]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture
def api_world(db, lead, project):
    """A ready version with rows and a scorecard, an annotator member, tokens of each scope."""
    version = make_version(project)
    services.judge_run_upload(
        version=version, judge="org/judge-x", file=predictions_upload(), by=lead
    )
    member = make_user("member")
    member_add(project=project, user=member)
    revoked = make_token(lead, scope="predictions")
    ApiToken.objects.filter(prefix=revoked[:8]).update(revoked_at=timezone.now())
    return {
        "project": project,
        "version": version,
        "tokens": {
            "lead-read": make_token(lead, scope="read"),
            "lead-predictions": make_token(lead, scope="predictions"),
            "member-read": make_token(member, scope="read"),
            "member-predictions": make_token(member, scope="predictions"),
            "revoked": revoked,
            "none": None,
        },
    }


# Loaded once at collection through the app itself (the schema view reads no database).
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


@pytest.mark.django_db(transaction=True)
@schema.given(
    who=st.sampled_from(WHO),
    real=st.booleans(),
)
@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_matches_its_schema(case, who, real, api_world):
    if real:
        params = case.path_parameters or {}
        known = {
            "slug": api_world["project"].slug,
            "number": api_world["version"].number,
            "split": "open_ended",
            "judge": "org/judge-x",
        }
        for name in list(params):
            if name in known:
                params[name] = known[name]
    key = api_world["tokens"][who]
    headers = {"Authorization": f"Token {key}"} if key else {}
    case.call_and_validate(headers=headers, checks=CHECKS)


def test_the_schema_documents_pages_errors_and_limits():
    raw = schema.raw_schema
    components = raw["components"]["schemas"]
    rows = raw["paths"]["/api/projects/{slug}/versions/{number}/rows/"]["get"]["responses"]
    page = rows["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(components[page]["properties"]) == {"count", "next", "previous", "results"}
    assert components[page]["properties"]["results"]["type"] == "array"
    submit = raw["paths"]["/api/projects/{slug}/versions/{number}/predictions/"]["post"]
    error = submit["responses"]["400"]["content"]["application/json"]["schema"]["$ref"]
    error_schema = components[error.rsplit("/", 1)[-1]]
    assert set(error_schema["required"]) == {"detail", "errors"}
    assert "413" in submit["responses"]
    for path, operations in raw["paths"].items():
        for method, operation in operations.items():
            if path.startswith("/api/projects"):
                assert {"401", "403", "404", "429"} <= set(operation["responses"]), (path, method)
