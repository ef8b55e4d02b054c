"""API tokens: the lead creates them for a user (the key is shown once) and revokes them."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from core.auth import (
    PREDICTIONS_SCOPE,
    READ_SCOPE,
    TOKEN_PREFIX_LENGTH,
    generate_key,
    hash_key,
)
from core.models import ApiToken
from core.permissions import is_lead

# The scopes a lead may give a token (see core.auth), with their names on the page.
SCOPES = {
    READ_SCOPE: "Read datasets",
    PREDICTIONS_SCOPE: "Read datasets and submit predictions",
}


@transaction.atomic
def token_create(*, user: Any, name: str, by: Any, scope: str = READ_SCOPE) -> tuple[ApiToken, str]:
    """Create a token for ``user``; returns it and its key, which is stored only as a hash."""
    if not is_lead(by):
        raise PermissionDenied("Only the project lead creates API tokens.")
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "Give the token a name, e.g. what it is for."})
    if len(name) > ApiToken._meta.get_field("name").max_length:
        raise ValidationError({"name": "The name is too long (100 characters at most)."})
    if scope not in SCOPES:
        raise ValidationError({"scope": f"Unknown scope {scope!r}: use read or predictions."})
    if not user.is_active:
        raise ValidationError({"user": "This user is inactive."})
    key = generate_key()
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=key[:TOKEN_PREFIX_LENGTH],
        key_hash=hash_key(key),
        scope=scope,
        created_by=by,
    )
    return token, key


@transaction.atomic
def token_revoke(*, token: ApiToken, by: Any) -> ApiToken:
    """Revoke the token at once (revoking twice keeps the first time)."""
    if not is_lead(by):
        raise PermissionDenied("Only the project lead revokes API tokens.")
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token
