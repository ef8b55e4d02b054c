"""The API answers as its OpenAPI schema says: schemathesis against the live test server, bounded.

Every operation of /api/schema/ gets generated requests, valid and invalid (path, query, headers,
bodies: the examples, coverage and fuzzing phases), half of them aimed at a real project, version,
file and scorecard, each sent with a real token of one scope (read, predictions), a revoked one
or none, some with a byte range. Every check schemathesis has runs on every answer: no 500, every
status, content type, header and body as documented, invalid data refused, valid data accepted.
Version 2 holds an empty file, the edge of the byte ranges.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from django.core.files.base import ContentFile
from django.core.wsgi import get_wsgi_application
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance
from schemathesis.config import PositiveDataAcceptanceConfig
from schemathesis.core.parameters import ParameterLocation

from aggregation.models import DatasetFile, DatasetVersion
from annotation.services.projects import member_add
from core.models import ApiToken
from judging.services import scoring as services
from tests.conftest import make_user
from tests.judging.web_data import make_token, make_version, predictions_upload

WHO = ["lead-read", "lead-predictions", "member-read", "member-predictions", "revoked", "none"]
#: Byte ranges sent on top of the generated requests (None keeps the generated header, if any).
RANGES = [None, "bytes=0-0", "bytes=0-", "bytes=-1", "bytes=3-", "bytes=5-2", "bytes=9999999-"]
#: Generated requests per operation and phase: enough for every parameter's edges, bounded.
MAX_EXAMPLES = 100
#: Every case sent, for the figures a failure reports.
SENT: list[str] = []


#: What a file of each kind holds in version 1 (the bytes are only served, never read).
BODIES = {
    DatasetFile.Kind.JSONL: b'{"row": 1}\n{"row": 2}\n',
    DatasetFile.Kind.JSONL_ZIP: b"PK\x05\x06" + bytes(18),
    DatasetFile.Kind.PARQUET: b"PAR1PAR1",
    DatasetFile.Kind.MANIFEST: b'{"rows": 2}',
}


def _file(version: DatasetVersion, kind: str, body: bytes) -> None:
    record = DatasetFile(version=version, kind=kind, size=len(body), sha256="0" * 64)
    record.file.save(f"{kind}.bin", ContentFile(body), save=False)
    record.save()


@pytest.fixture
def api_world(transactional_db, lead, project) -> Iterator[dict]:
    """Version 1: rows, a scorecard and a file of every kind; version 2: an empty JSONL file.
    An annotator member; tokens of each scope and a revoked one."""
    version = make_version(project)
    for kind, body in BODIES.items():
        _file(version, kind, body)
    # An empty JSONL file of no row; no contested split in version 1: scoring would read it.
    _file(make_version(project, number=2), DatasetFile.Kind.JSONL, b"")
    services.judge_run_upload(
        version=version, judge="org/judge-x", file=predictions_upload(), by=lead
    )
    member = make_user("member")
    member_add(project=project, user=member)
    revoked = make_token(lead, scope="predictions")
    ApiToken.objects.filter(prefix=revoked[:8]).update(revoked_at=timezone.now())
    yield {
        "project": project,
        "tokens": {
            "lead-read": make_token(lead, scope="read"),
            "lead-predictions": make_token(lead, scope="predictions"),
            "member-read": make_token(member, scope="read"),
            "member-predictions": make_token(member, scope="predictions"),
            "revoked": revoked,
            "none": None,
        },
    }


# Read once at collection through the app itself (the schema view reads no database); the cases
# are sent over HTTP to the live test server.
schema = schemathesis.openapi.from_dict(
    schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application()).raw_schema
)
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=MAX_EXAMPLES,
    deterministic=True,
    # OpenAPI cannot forbid query parameters it does not name; the API ignores them, as usual.
    allow_extra_parameters=False,
)
# A well-formed byte range past the end of a file is refused with 416, as documented.
schema.config.checks.positive_data_acceptance = PositiveDataAcceptanceConfig(
    expected_statuses=[*PositiveDataAcceptanceConfig().expected_statuses, "416"]
)
#: A predictions body may fit the schema and still name rows the version lacks, or hold a file
#: that is no predictions file: the documented 400 naming the line and field answers it. The
#: bodies' shapes are tested in tests/test_api_answers.py. A comparison may name judges of no
#: scorecard (the generated names are random): the documented 400 names the parameter.
CONTENT_JUDGED = {
    ("POST", "/api/projects/{slug}/versions/{number}/predictions/"),
    ("GET", "/api/projects/{slug}/versions/{number}/compare/"),
}


@schema.given(
    who=st.sampled_from(WHO),
    real=st.booleans(),
    number=st.sampled_from([1, 2]),
    kind=st.sampled_from(DatasetFile.Kind.values),
    byte_range=st.sampled_from(RANGES),
)
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_matches_its_schema(
    case, who, real, number, kind, byte_range, api_world, live_server
):
    params = case.path_parameters or {}
    path_mode = case.meta.components.get(ParameterLocation.PATH) if case.meta else None
    if real and not (path_mode and path_mode.mode.is_negative):
        known = {
            "slug": api_world["project"].slug,
            "number": number,
            "kind": kind,
            "split": "open_ended",
            "judge": "org/judge-x",
        }
        for name in list(params):
            if name in known:
                params[name] = known[name]
    key = api_world["tokens"][who]
    headers = {"Authorization": f"Token {key}"} if key else {}
    if byte_range is not None:
        headers["Range"] = byte_range
    SENT.append(f"{case.method} {case.formatted_path}")
    judged = (case.method, case.operation.path) in CONTENT_JUDGED
    case.call_and_validate(
        base_url=live_server.url,
        headers=headers,
        excluded_checks=[positive_data_acceptance] if judged else [],
    )


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
