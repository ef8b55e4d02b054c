"""The lead creates projects and annotator accounts in the browser; an invite sets a password."""

from __future__ import annotations

import re
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.models import Criterion, Project, ProjectMember
from annotation.services.accounts import annotator_invite, invite_path
from core.permissions import ANNOTATOR_GROUP

User = get_user_model()


def test_the_lead_creates_a_project_with_the_default_criteria(client, lead):
    client.force_login(lead)
    response = client.post(
        reverse("project-new"), {"name": "Chart study 2", "slug": "", "description": "Pilot."}
    )
    project = Project.objects.get(slug="chart-study-2")
    assert response.status_code == 302 and response.url == reverse("members", args=[project.slug])
    assert (project.name, project.description) == ("Chart study 2", "Pilot.")
    assert Criterion.objects.filter(project=project).count() == 10


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "", "slug": "x"}, "This field is required."),
        (
            {"name": "Test project", "slug": ""},
            "A project already uses the address “test-project”.",
        ),
        ({"name": "New", "slug": ""}, "A project already uses the address “new”."),
        ({"name": "Fine", "slug": "not a slug!"}, "Enter a valid “slug”"),
    ],
)
def test_a_bad_project_is_refused_naming_the_field(client, lead, project, data, message):
    client.force_login(lead)
    response = client.post(reverse("project-new"), data)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert Project.objects.count() == 1


def test_the_lead_creates_an_account_and_gets_a_one_time_link(client, lead, project):
    client.force_login(lead)
    response = client.post(
        reverse("member-invite", args=[project.slug]),
        {"username": "newbie", "email": "newbie@example.org", "full_name": "Ada Lovelace"},
    )
    html = response.content.decode()
    user = User.objects.get(username="newbie")
    assert (user.email, user.first_name, user.last_name) == (
        "newbie@example.org",
        "Ada",
        "Lovelace",
    )
    assert not user.has_usable_password()
    assert user.groups.filter(name=ANNOTATOR_GROUP).exists()
    assert ProjectMember.objects.filter(project=project, user=user, is_active=True).exists()
    link = re.search(r'value="(http://testserver/accounts/invite/[^"]+)"', html).group(1)
    assert "expires in 72 hours" in html
    # The members page marks the account as invited, with a button for a new link.
    members = client.get(reverse("members", args=[project.slug])).content.decode()
    assert "no password yet" in members and "New invite link" in members
    # The link shown works for the invitee, in their own browser.
    _, accepted = _accept(
        Client(), link.removeprefix("http://testserver"), "a-long-enough-secret-42"
    )
    assert accepted.status_code == 302
    user.refresh_from_db()
    assert user.check_password("a-long-enough-secret-42")


def _accept(client, path: str, password: str):
    """Open the link (Django moves the token into the session), then post the password."""
    response = client.get(path)
    assert response.status_code == 302  # to the same page without the token in the address
    form_url = response.url
    page = client.get(form_url)
    assert page.status_code == 200
    return form_url, client.post(form_url, {"new_password1": password, "new_password2": password})


def test_the_invitee_sets_a_password_once_and_is_logged_in(client, lead, project):
    user, _ = annotator_invite(project=project, username="newbie", by=lead)
    path = invite_path(user=user)
    _, response = _accept(client, path, "a-long-enough-secret-42")
    assert response.status_code == 302 and response.url == reverse("home")
    user.refresh_from_db()
    assert user.check_password("a-long-enough-secret-42")
    assert client.get(reverse("home")).context["user"] == user
    # The same link does nothing the second time.
    client.logout()
    again = client.get(path)
    assert again.status_code == 200
    assert "This invite link no longer works" in again.content.decode()


def test_a_weak_password_is_refused_with_djangos_validators(client, lead, project):
    user, _ = annotator_invite(project=project, username="newbie", by=lead)
    _, response = _accept(client, invite_path(user=user), "12345678")
    html = response.content.decode()
    assert response.status_code == 200
    assert "This password is too common." in html and "This password is entirely numeric." in html
    user.refresh_from_db()
    assert not user.has_usable_password()


def test_an_expired_link_no_longer_works(client, lead, project, settings):
    user, _ = annotator_invite(project=project, username="newbie", by=lead)
    path = invite_path(user=user)
    from annotation.services.accounts import invite_tokens

    later = invite_tokens._now() + timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 1)
    with mock.patch.object(type(invite_tokens), "_now", return_value=later):
        response = client.get(path)
    assert "This invite link no longer works" in response.content.decode()


def test_a_password_reset_token_is_not_an_invite(client, lead, project):
    from django.contrib.auth.tokens import default_token_generator
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    user, _ = annotator_invite(project=project, username="newbie", by=lead)
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    path = reverse("invite-accept", args=[uid, default_token_generator.make_token(user)])
    assert "This invite link no longer works" in client.get(path).content.decode()


def test_a_taken_username_is_refused(client, lead, project, annotator):
    client.force_login(lead)
    response = client.post(
        reverse("member-invite", args=[project.slug]),
        {"username": annotator.username.upper()},
        follow=True,
    )
    assert f"username: “{annotator.username.upper()}” is taken" in response.content.decode()
    assert User.objects.filter(username__iexact=annotator.username).count() == 1


def test_a_new_link_is_only_for_members_without_a_password(client, lead, project, annotator):
    from annotation.services.projects import member_add

    member = member_add(project=project, user=annotator)
    client.force_login(lead)
    url = reverse("member-invite-again", args=[project.slug, member.pk])
    response = client.post(url, follow=True)
    assert "has set a password already; no invite needed." in response.content.decode()
    _, invited = annotator_invite(project=project, username="newbie", by=lead)
    html = client.post(
        reverse("member-invite-again", args=[project.slug, invited.pk])
    ).content.decode()
    assert "New invite link" in html and "/accounts/invite/" in html


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_only_the_lead_creates_projects_and_accounts(client, project, annotator, outsider, who):
    client.force_login(annotator if who == "annotator" else outsider)
    assert client.post(reverse("project-new"), {"name": "Mine"}).status_code == 403
    response = client.post(reverse("member-invite", args=[project.slug]), {"username": "sneaky"})
    assert response.status_code == 403
    assert not Project.objects.filter(name="Mine").exists()
    assert not User.objects.filter(username="sneaky").exists()
