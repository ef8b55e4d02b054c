"""The health probes, answered before every other middleware.

A container's probe asks the server directly (``http://127.0.0.1:8000/healthz``): over plain
HTTP and with its own address as the host, which the HTTPS redirect and ``ALLOWED_HOSTS`` would
refuse. The probes read no session, set no cookie and build no absolute URL, so neither check
protects anything there.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .views.health import healthz, readyz

PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {"/healthz": healthz, "/readyz": readyz}


class ProbeMiddleware:
    """Answer ``/healthz`` and ``/readyz`` at once; pass every other request on."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is not None:
            return probe(request)
        return self.get_response(request)
