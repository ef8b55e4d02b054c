"""Accounts for comparing with Label Studio: an owner and N annotators with legacy tokens.

Runs inside Label Studio's own Django shell (its virtualenv, its settings), not the project's:

    ANNOTATORS=50 <label-studio python> <label_studio package>/manage.py shell \
        < bench/label_studio_accounts.py

Enables legacy tokens for the organisation (Label Studio 1.23 turns them off by default and
answers 401 to them), makes ``owner@bench.local`` and ``annotator00@bench.local``...
members of it, and prints the two variables ``bench/labeling.py`` reads. Idempotent.
"""

import os

from jwt_auth.models import JWTSettings
from organizations.models import Organization
from rest_framework.authtoken.models import Token
from users.models import User


def member(email: str, org: Organization | None, **extra) -> tuple[User, Organization]:
    """The user with this email, made a member of the organisation (created with the first)."""
    user, _ = User.objects.get_or_create(email=email, defaults=extra)
    user.set_unusable_password()
    user.save()
    if org is None:
        org = Organization.objects.first() or Organization.create_organization(
            created_by=user, title="Bench"
        )
    if not org.has_user(user):
        org.add_user(user)
    user.active_organization = org
    user.save(update_fields=["active_organization"])
    return user, org


owner, org = member("owner@bench.local", None, is_staff=True, is_superuser=True)
settings, _ = JWTSettings.objects.get_or_create(organization=org)
settings.legacy_api_tokens_enabled = True
settings.save()
tokens = [
    Token.objects.get_or_create(user=member(f"annotator{i:02d}@bench.local", org)[0])[0].key
    for i in range(int(os.environ.get("ANNOTATORS", "50")))
]
print(f"LABEL_STUDIO_TOKEN={Token.objects.get_or_create(user=owner)[0].key}")
print(f"LABEL_STUDIO_TOKENS={','.join(tokens)}")
