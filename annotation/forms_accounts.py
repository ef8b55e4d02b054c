"""Forms of the lead's project and account pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.utils.text import slugify

from .models import LabelScale, Project

# Addresses that are pages of their own (``/projects/new/``).
RESERVED_SLUGS = {"new"}


class ProjectCreateForm(forms.ModelForm):
    """A new project's name, its address (derived from the name when left empty), a description."""

    class Meta:
        model = Project
        fields = ["name", "slug", "description", "label_scale"]
        labels = {"slug": "Address (letters, digits, hyphens)", "label_scale": "Label scale"}
        help_texts = {
            "slug": "Left empty, it is made from the name.",
            "label_scale": "How annotators answer each (sample, criterion). It can be changed "
            "until formal annotation starts.",
        }
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["slug"].required = False
        self.fields["label_scale"].required = False

    def clean_label_scale(self) -> str:
        """Left out of a post, a project is pairwise (today's A / B / tie)."""
        return self.cleaned_data.get("label_scale") or LabelScale.PAIRWISE

    def clean_slug(self) -> str:
        slug = self.cleaned_data.get("slug") or slugify(self.data.get("name", ""))[:80]
        if not slug:
            raise forms.ValidationError("Give the project an address, e.g. chart-study.")
        if slug in RESERVED_SLUGS or Project.objects.filter(slug=slug).exists():
            raise forms.ValidationError(f"A project already uses the address “{slug}”.")
        return slug


class InviteForm(forms.Form):
    """A new annotator account: the username they log in with, optional e-mail and name."""

    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False, label="E-mail (optional)")
    full_name = forms.CharField(required=False, max_length=150, label="Full name (optional)")

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        User = get_user_model()
        field = User._meta.get_field(User.USERNAME_FIELD)
        for validator in field.validators:
            validator(username)
        if User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username}).exists():
            raise forms.ValidationError(
                f"“{username}” is taken; add an existing user with the form above instead."
            )
        return username
