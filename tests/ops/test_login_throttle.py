"""Login lockout per account and per address (django-axes), and the API's request throttles."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.throttling import SimpleRateThrottle

from core.permissions import LEAD_GROUP
from core.tokens import token_create
from tests.conftest import make_user

LOGIN = "/accounts/login/"
PASSWORD = "pw-for-tests"


def attempt(username: str, password: str, address: str = "127.0.0.1"):
    """One login form submission from ``address`` with a fresh browser."""
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})


def logged_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == "/"


@pytest.fixture
def lead_user(db):
    return make_user("lena", LEAD_GROUP, password=PASSWORD)


def test_ten_wrong_passwords_lock_the_account_from_every_address(lead_user, settings):
    assert settings.AXES_FAILURE_LIMIT == 10
    for _ in range(9):
        response = attempt("lena", "wrong", "198.51.100.1")
        assert response.status_code == 200 and b"Please try again" in response.content
    locked = attempt("lena", "wrong", "198.51.100.1")
    assert locked.status_code == 429
    # The right password is refused now, with the lockout page in the site's layout.
    refused = attempt("lena", PASSWORD, "198.51.100.1")
    assert refused.status_code == 429 and not logged_in(refused)
    body = refused.content.decode()
    assert "Login temporarily locked" in body and 'class="topbar"' in body and "lena" in body
    # From another address too: a brute force spread over many addresses gains nothing.
    elsewhere = attempt("lena", PASSWORD, "203.0.113.7")
    assert elsewhere.status_code == 429 and not logged_in(elsewhere)
    # Other accounts from other addresses are not affected.
    make_user("ann1", password=PASSWORD)
    assert logged_in(attempt("ann1", PASSWORD, "203.0.113.8"))
    # The lead unlocks the account: the right password works again.
    call_command("axes_reset_username", "lena")
    assert logged_in(attempt("lena", PASSWORD, "203.0.113.7"))


def test_one_address_trying_many_accounts_is_locked(lead_user):
    for i in range(10):
        attempt(f"guess{i}", "wrong", "198.51.100.2")
    # Every login from that address is refused, even a real account's right password ...
    assert attempt("lena", PASSWORD, "198.51.100.2").status_code == 429
    # ... while the account itself is not locked elsewhere.
    assert logged_in(attempt("lena", PASSWORD, "198.51.100.3"))
    call_command("axes_reset_ip", "198.51.100.2")
    assert logged_in(attempt("lena", PASSWORD, "198.51.100.2"))


def test_a_success_below_the_limit_is_not_locked(lead_user):
    for _ in range(9):
        attempt("lena", "wrong")
    assert logged_in(attempt("lena", PASSWORD))


def test_proxy_header_ignored_unless_behind_proxy(lead_user, settings):
    """Without BEHIND_PROXY a client cannot dodge the address lock with X-Forwarded-For."""
    assert settings.BEHIND_PROXY is False
    for i in range(10):
        Client(REMOTE_ADDR="198.51.100.4", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}").post(
            LOGIN, {"username": f"guess{i}", "password": "wrong"}
        )
    response = Client(REMOTE_ADDR="198.51.100.4", HTTP_X_FORWARDED_FOR="192.0.2.99").post(
        LOGIN, {"username": "lena", "password": PASSWORD}
    )
    assert response.status_code == 429


def test_behind_proxy_the_address_is_the_one_the_proxy_appended(lead_user, settings):
    """Behind the proxy, the last X-Forwarded-For entry counts; a forged first entry does not."""
    settings.AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    settings.AXES_IPWARE_PROXY_ORDER = "right-most"
    for i in range(10):
        Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}, 198.51.100.5").post(
            LOGIN, {"username": f"guess{i}", "password": "wrong"}
        )
    proxied = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.5")
    assert proxied.post(LOGIN, {"username": "lena", "password": PASSWORD}).status_code == 429
    other = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.6")
    assert logged_in(other.post(LOGIN, {"username": "lena", "password": PASSWORD}))


def test_api_answers_429_with_retry_after_over_the_rate(lead_user, monkeypatch):
    # DRF reads the rates once, when it is imported: set a tiny one on the throttle classes.
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "2/minute"}
    )
    key = token_create(user=lead_user, name="scripts", by=lead_user)[1]
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    statuses = [client.get("/api/projects/").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    response = client.get("/api/projects/")
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60
    assert "throttled" in response.json()["detail"]
    # Another user has a count of their own.
    other = make_user("lead2", LEAD_GROUP)
    other_key = token_create(user=other, name="scripts", by=other)[1]
    assert Client(HTTP_AUTHORIZATION=f"Token {other_key}").get("/api/projects/").status_code == 200


def test_default_api_rates_are_generous(settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    assert rates == {"user": "5000/hour", "anon": "300/hour"}
    assert "UserRateThrottle" in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"][0]
