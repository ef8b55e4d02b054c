"""The lead creates projects and annotator accounts; an invitee sets a password from a link."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_http_methods, require_POST

from core.permissions import get_member, lead_required

from ..forms import form_error_text
from ..forms_accounts import InviteForm, ProjectCreateForm
from ..models import ProjectMember
from ..selectors.projects import project_get
from ..services.accounts import annotator_invite, invite_path, invite_tokens
from ..services.projects import project_create


@lead_required
@require_http_methods(["GET", "POST"])
def project_new(request: HttpRequest) -> HttpResponse:
    """A new project with the default criteria of both splits."""
    form = ProjectCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        project = project_create(
            name=form.cleaned_data["name"],
            slug=form.cleaned_data["slug"],
            description=form.cleaned_data["description"],
            label_scale=form.cleaned_data["label_scale"],
        )
        messages.success(request, f"Project “{project.name}” created with the default criteria.")
        return redirect("members", slug=project.slug)
    return render(request, "annotation/project_new.html", {"form": form})


def _invite_page(request: HttpRequest, project, member: ProjectMember, *, created: bool):
    link = request.build_absolute_uri(invite_path(user=member.user))
    return render(
        request,
        "annotation/invite_link.html",
        {
            "project": project,
            "member": member,
            "link": link,
            "created": created,
            "timeout_hours": settings.PASSWORD_RESET_TIMEOUT // 3600,
        },
    )


@lead_required
@require_POST
def member_invite(request: HttpRequest, slug: str) -> HttpResponse:
    """Create an annotator account in the project and show its invite link once."""
    project = project_get(slug=slug)
    form = InviteForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_error_text(form))
        return redirect("members", slug=project.slug)
    _, member = annotator_invite(project=project, by=request.user, **form.cleaned_data)
    return _invite_page(request, project, member, created=True)


@lead_required
@require_POST
def member_invite_again(request: HttpRequest, slug: str, member_id: int) -> HttpResponse:
    """A new invite link for a member who has not set a password yet."""
    project = project_get(slug=slug)
    member = get_member(project, member_id)
    if member.user.has_usable_password():
        messages.error(
            request, f"{member.user.get_username()} has set a password already; no invite needed."
        )
        return redirect("members", slug=project.slug)
    return _invite_page(request, project, member, created=False)


class InviteAccept(auth_views.PasswordResetConfirmView):
    """Django's password-reset confirmation with the invite tokens: choose a password, log in.

    Like a reset link, the token is moved into the session and the address bar no longer shows
    it; a used or expired link says so.
    """

    token_generator = invite_tokens
    template_name = "registration/invite_accept.html"
    post_reset_login = True
    post_reset_login_backend = "core.backends.RoleModelBackend"
    success_url = reverse_lazy("home")
    reset_url_token = "set-password"

    def form_valid(self, form):
        response = super().form_valid(form)
        messages.success(self.request, "Your password is set. Welcome!")
        return response


invite_accept = InviteAccept.as_view()
