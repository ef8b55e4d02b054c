"""Forms of the core pages: API tokens."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from .models import ApiToken
from .tokens import SCOPES


class TokenForm(forms.Form):
    """A new API token: the active user it acts for, a name and a scope."""

    user = forms.ModelChoiceField(
        queryset=get_user_model().objects.none(),
        error_messages={
            "required": "Choose the user the token acts for.",
            "invalid_choice": "Choose the user the token acts for (an active user).",
            "invalid": "Choose the user the token acts for (an active user).",
        },
    )
    name = forms.CharField(
        max_length=ApiToken._meta.get_field("name").max_length,
        error_messages={
            "required": "Give the token a name, e.g. what it is for.",
            "max_length": "The name is too long (%(limit_value)d characters at most).",
        },
    )
    scope = forms.ChoiceField(
        choices=list(SCOPES.items()),
        required=False,
        error_messages={"invalid_choice": "Unknown scope %(value)r: use read or predictions."},
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["user"].queryset = get_user_model().objects.filter(is_active=True)

    def clean_scope(self) -> str:
        return self.cleaned_data["scope"] or "read"
