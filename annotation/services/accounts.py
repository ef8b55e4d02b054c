"""Annotator accounts the lead creates in the browser, and the invite links that set a password.

An invite link carries a token from Django's password-reset token generator (with its own salt):
it names the user, expires after ``PASSWORD_RESET_TIMEOUT`` seconds, and stops working once the
password is set, because the token hashes the stored password. Nothing is stored for it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from ..models import Project, ProjectMember
from .projects import member_add


class InviteTokenGenerator(PasswordResetTokenGenerator):
    """Password-reset tokens under another salt, so a reset link is never an invite and back."""

    key_salt = "annotation.services.accounts.InviteTokenGenerator"


invite_tokens = InviteTokenGenerator()


def invite_path(*, user: Any) -> str:
    """The path of a fresh invite link for ``user`` (valid until used or expired)."""
    uidb64 = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("invite-accept", args=[uidb64, invite_tokens.make_token(user)])


@transaction.atomic
def annotator_invite(
    *, project: Project, username: str, email: str = "", full_name: str = "", by: Any
) -> tuple[Any, ProjectMember]:
    """Create an annotator account without a password and add it to ``project``.

    The account cannot log in until its holder opens the invite link (:func:`invite_path`) and
    chooses a password. The caller has checked that the username is free.
    """
    first, _, last = full_name.strip().partition(" ")
    user = get_user_model().objects.create_user(
        username=username, email=email, first_name=first, last_name=last.strip()
    )  # no password given: an unusable one is stored
    return user, member_add(project=project, user=user)
