"""The Content-Security-Policy header: own scripts and styles only, a wider one for the API docs."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings


def directives(header: str) -> dict[str, str]:
    """The policy as directive -> sources."""
    parts = (part.strip().split(" ", 1) for part in header.split(";") if part.strip())
    return {name: (rest[0] if rest else "") for name, *rest in parts}


def test_every_page_gets_a_policy_without_inline_script(client) -> None:
    response = client.get("/accounts/login/")
    policy = directives(response["Content-Security-Policy"])
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["object-src"] == "'none'"
    assert policy["base-uri"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["form-action"] == "'self'"
    assert "unsafe" not in response["Content-Security-Policy"]


def test_the_swagger_page_alone_may_run_its_inline_bootstrap(client, django_user_model) -> None:
    user = django_user_model.objects.create_user("reader", password="pw-for-tests")
    client.force_login(user)
    docs = client.get("/api/docs/")
    assert "'unsafe-inline'" in directives(docs["Content-Security-Policy"])["script-src"]
    assert directives(docs["Content-Security-Policy"])["object-src"] == "'none'"
    schema = client.get("/api/schema/")
    assert "unsafe" not in schema["Content-Security-Policy"]


def test_templates_hold_no_inline_script_handler_or_style() -> None:
    templates = Path(settings.BASE_DIR) / "templates"
    for path in templates.rglob("*.html"):
        text = path.read_text()
        # A script tag must load a file; JSON data islands are not executed.
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag or "application/json" in tag, f"{path.name}: {tag}"
        assert not re.search(r"\son[a-z]+\s*=", text), path.name
        assert "style=" not in text, path.name
