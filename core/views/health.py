"""The liveness and readiness probes (see core.health); core.middleware answers them first."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from ..health import readiness


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers: 200, always."""
    return JsonResponse({"status": "alive"})


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """Each dependency and its state: 200 when none is down, else 503."""
    ready, body = readiness()
    return JsonResponse(body, status=200 if ready else 503)
