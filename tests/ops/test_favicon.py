"""The site icon: linked from every page, and /favicon.ico answers instead of a 404."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.test import Client

from tests.conftest import make_user

ICON_LINK = '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'


@pytest.mark.parametrize("logged_in", [False, True])
def test_favicon_ico_redirects_to_the_svg_icon(db, logged_in):
    client = Client()
    if logged_in:
        client.force_login(make_user("someone"))
    response = client.get("/favicon.ico")
    assert (response.status_code, response["Location"]) == (301, "/static/favicon.svg")
    icon = client.get(response["Location"])
    assert icon.status_code == 200
    assert icon["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(icon.streaming_content)


def test_every_kind_of_page_links_the_icon(db, settings, project):
    settings.DEBUG = False
    lead = make_user("lead-user", "lead")
    client = Client()
    pages = {"login": client.get("/accounts/login/")}
    client.force_login(lead)
    pages["home"] = client.get("/")
    pages["project"] = client.get(f"/projects/{project.slug}/")
    pages["not found"] = client.get("/no/such/page/")
    for name, response in pages.items():
        assert ICON_LINK in response.content.decode(), name


def test_the_server_error_page_links_the_icon_too():
    # Rendered by Django's handler without a request or context processors.
    assert ICON_LINK in render_to_string("500.html")
