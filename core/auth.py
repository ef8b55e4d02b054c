"""DRF authentication by per-user API tokens (``Authorization: Token <key>`` or ``Bearer``)."""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions

from .models import ApiToken

TOKEN_PREFIX_LENGTH = 8

# "read": the dataset API (projects, versions, rows, files). "predictions": also submits judge
# predictions. Neither writes anything else.
READ_SCOPE = "read"
PREDICTIONS_SCOPE = "predictions"
READ_SCOPES = frozenset({READ_SCOPE, PREDICTIONS_SCOPE})
_SCOPE_SEPARATORS = re.compile(r"[\s,]+")


def token_scopes(token: ApiToken) -> set[str]:
    """A token's scopes (the field may list several, separated by spaces or commas)."""
    return {s for s in _SCOPE_SEPARATORS.split(token.scope or "") if s}


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def generate_key() -> str:
    return "mcs_" + secrets.token_urlsafe(32)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("token", "bearer")

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0].lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: expected 'Token <key>'.")
        token = ApiToken.objects.select_related("user").filter(key_hash=hash_key(header[1])).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown API token.")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This API token has been revoked.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's user is inactive.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return "Token"
