"""The lead's API tokens page: create a token for a user (key shown once) and revoke tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from ..forms import TokenForm
from ..models import ApiToken
from ..permissions import lead_required
from ..tokens import SCOPES, token_create, token_revoke


def _context(**extra: object) -> dict[str, object]:
    users = get_user_model().objects.filter(is_active=True).order_by("username")
    # Active tokens first, newest first; revoked ones below.
    tokens = ApiToken.objects.select_related("user", "created_by").order_by(
        F("revoked_at").desc(nulls_first=True), "-created_at"
    )
    return {"tokens": tokens, "users": users, "scopes": SCOPES.items(), **extra}


@lead_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return render(request, "core/tokens.html", _context())
    form = TokenForm(request.POST)
    errors: dict[str, list[str]] = dict(form.errors)
    if form.is_valid():
        try:
            token, key = token_create(
                user=form.cleaned_data["user"],
                name=form.cleaned_data["name"],
                scope=form.cleaned_data["scope"],
                by=request.user,
            )
        except ValidationError as exc:
            errors = exc.message_dict
        else:
            # The key is rendered this once and never stored; a reload shows only its prefix.
            response = render(request, "core/tokens.html", _context(new_token=token, new_key=key))
            response["Cache-Control"] = "no-store"
            return response
    return render(
        request,
        "core/tokens.html",
        # The form comes back as typed.
        _context(errors=errors, form={k: form.data.get(k, "") for k in form.fields}),
        status=400,
    )


@lead_required
@require_POST
def token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    token = token_revoke(token=get_object_or_404(ApiToken, pk=pk), by=request.user)
    if request.htmx:
        return render(request, "core/tokens.html#token-row", {"token": token})
    messages.success(request, f"Token “{token.name}” is revoked.")
    return redirect("tokens")
