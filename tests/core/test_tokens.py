"""The API tokens page: lead only, the key shown once, only its hash stored, revocation."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from core.auth import hash_key
from core.models import ApiToken
from core.tokens import token_create, token_revoke


def test_page_is_for_the_lead_only(client, lead, annotator, outsider):
    assert client.get("/tokens/").status_code == 302  # to the login page
    for user in (annotator, outsider):
        client.force_login(user)
        assert client.get("/tokens/").status_code == 403
        assert client.post("/tokens/", {"user": user.pk, "name": "x"}).status_code == 403
    assert not ApiToken.objects.exists()
    client.force_login(lead)
    response = client.get("/tokens/")
    assert response.status_code == 200 and b"Create a token" in response.content


def test_key_is_shown_once_and_only_its_hash_is_stored(client, lead, annotator):
    client.force_login(lead)
    response = client.post("/tokens/", {"user": annotator.pk, "name": "notebook", "scope": "read"})
    assert response.status_code == 200
    key = response.context["new_key"]
    assert key.startswith("mcs_") and len(key) > 40
    assert key.encode() in response.content
    assert response["Cache-Control"] == "no-store"
    token = ApiToken.objects.get()
    assert (token.user, token.name, token.scope, token.created_by) == (
        annotator,
        "notebook",
        "read",
        lead,
    )
    assert token.key_hash == hash_key(key) and token.prefix == key[:8]
    stored = [str(v) for v in ApiToken.objects.values().get().values()]
    assert key not in stored
    page = client.get("/tokens/")
    assert key.encode() not in page.content and token.prefix.encode() in page.content
    # The key works against the API.
    assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def test_bad_input_names_the_field(client, lead, annotator):
    client.force_login(lead)
    response = client.post("/tokens/", {"user": annotator.pk, "name": "  "})
    assert response.status_code == 400 and b"Give the token a name" in response.content
    response = client.post("/tokens/", {"user": "", "name": "n"})
    assert response.status_code == 400 and b"Choose the user" in response.content
    response = client.post("/tokens/", {"user": annotator.pk, "name": "n", "scope": "admin"})
    assert response.status_code == 400 and b"Unknown scope" in response.content
    assert not ApiToken.objects.exists()


def test_revoke_from_the_page(client, lead, annotator):
    token, key = token_create(user=annotator, name="n", by=lead)
    client.force_login(annotator)
    assert client.post(f"/tokens/{token.pk}/revoke/").status_code == 403
    client.force_login(lead)
    response = client.post(f"/tokens/{token.pk}/revoke/")
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    first = token.revoked_at
    response = client.post(f"/tokens/{token.pk}/revoke/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b"revoked" in response.content
    token.refresh_from_db()
    assert token.revoked_at == first
    assert client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401


def test_services_check_the_role(lead, annotator):
    with pytest.raises(PermissionDenied):
        token_create(user=annotator, name="n", by=annotator)
    token, _ = token_create(user=annotator, name="n", by=lead, scope="predictions")
    assert token.scope == "predictions"
    with pytest.raises(PermissionDenied):
        token_revoke(token=token, by=annotator)
    annotator.is_active = False
    annotator.save()
    with pytest.raises(ValidationError):
        token_create(user=annotator, name="n2", by=lead)


@pytest.mark.parametrize(
    ("scope", "parsed"),
    [
        ("read", {"read"}),
        ("read predictions", {"read", "predictions"}),
        (" read,predictions ,", {"read", "predictions"}),
        ("", set()),
    ],
)
def test_token_scopes_are_parsed_in_one_place(scope, parsed):
    """The dataset API and the predictions API read a token's scopes with one function."""
    import aggregation.api.views
    import judging.api.views
    from core.auth import READ_SCOPES, token_scopes
    from core.tokens import SCOPES

    assert token_scopes(ApiToken(scope=scope)) == parsed
    assert aggregation.api.views.token_scopes is judging.api.views.token_scopes is token_scopes
    assert set(SCOPES) == READ_SCOPES
