"""OpenAPI description of the API beyond what the views declare (picked up by drf-spectacular).

The token scheme, and the error answers every operation can give whatever its view: the request
guard's 400 (a NUL in the address) and 413 (a body over the limit), 401 / 403 from
authentication and permissions, 404 for an unknown project, version or address, and 429 from
throttling. All of them have the body ``{"detail": "..."}``; a view's own description of a
status (the predictions upload's 400 with its ``errors`` list) is kept.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

ERROR_SCHEMA = "ErrorOut"
COMMON_ERRORS = {
    "400": "Bad request: a parameter, or a NUL character (%00) in the address.",
    "401": "No, unknown or revoked token.",
    "403": "Not allowed: the token's scope or the user's role does not permit this.",
    "404": "No such project, version, file or scorecard, or no such API address.",
    "429": "Too many requests; retry after the time in the Retry-After header.",
}
BODY_ERRORS = {"413": "The request body is larger than the limit named in the message."}
_BODY_METHODS = {"post", "put", "patch"}
_METHODS = {"get", "head", "post", "put", "patch", "delete", "options"}


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "core.auth.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A per-user API token created by the lead: `Token <key>`.",
        }


def _error_response(description: str) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def add_common_errors(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: document the errors every API operation can give."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault(
        ERROR_SCHEMA,
        {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]},
    )
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        for method, operation in operations.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            errors = {**COMMON_ERRORS, **(BODY_ERRORS if method in _BODY_METHODS else {})}
            for status, description in errors.items():
                responses.setdefault(status, _error_response(description))
    return result
