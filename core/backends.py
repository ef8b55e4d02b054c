"""The login backend: Django's ModelBackend whose session lookup also reads the user's roles."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.db.models import Exists, OuterRef

from .permissions import ANNOTATOR_GROUP, LEAD_GROUP, roles_remember

ROLE_GROUPS = (LEAD_GROUP, ANNOTATOR_GROUP)


class RoleModelBackend(ModelBackend):
    """Loads the signed-in user and their role groups in one query (every page asks for both)."""

    def get_user(self, user_id: Any) -> Any:
        """The active user with that id, or None; their role groups are remembered on it."""
        model = get_user_model()
        flags = {
            f"_in_{name}": Exists(Group.objects.filter(user=OuterRef("pk"), name=name))
            for name in ROLE_GROUPS
        }
        user = model._default_manager.annotate(**flags).filter(pk=user_id).first()
        if user is None or not self.user_can_authenticate(user):
            return None
        roles_remember(user, {name for name in ROLE_GROUPS if getattr(user, f"_in_{name}")})
        return user
