"""Content-Security-Policy on every response: scripts and styles only from the site's own files.

Model output is untrusted; the renderer already keeps markup out of it, and this header is the
second wall: an inline script, an event handler attribute or a ``javascript:`` address that got
through would not run. The policy is ``settings.CONTENT_SECURITY_POLICY`` (directive to value).
The Swagger page of the API docs (a third-party template with an inline bootstrap script) gets
its own, wider policy; it shows no model output.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"
# Pages whose third-party markup needs inline script and style, by path prefix.
RELAXED_PATHS: dict[str, dict[str, str]] = {
    "/api/docs/": {
        "script-src": "'self' 'unsafe-inline'",
        "style-src": "'self' 'unsafe-inline'",
    },
}


def policy_header(directives: dict[str, str]) -> str:
    """The header value of a policy given as directive -> sources."""
    return "; ".join(f"{name} {value}".strip() for name, value in directives.items())


def policy_for(path: str) -> str:
    """The policy header for a request path."""
    directives = dict(settings.CONTENT_SECURITY_POLICY)
    for prefix, wider in RELAXED_PATHS.items():
        if path.startswith(prefix):
            directives.update(wider)
    return policy_header(directives)


class ContentSecurityPolicyMiddleware:
    """Add the Content-Security-Policy header unless a view set its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        """Keep the next handler."""
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Answer the request, then add the policy."""
        response = self.get_response(request)
        if HEADER not in response:
            response[HEADER] = policy_for(request.path)
        return response
