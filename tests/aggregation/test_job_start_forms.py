"""Bad input to the aggregation and version-build starts: a named 400, no job created."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Job

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.mark.parametrize("split", ["nowhere", "OPEN_ENDED", "x" * 300])
def test_an_unknown_split_is_refused(client, project, lead, split):
    client.force_login(lead)
    response = client.post(
        reverse("aggregation-start", args=[project.slug]), {"split": split}, **HTMX
    )
    assert response.status_code == 400
    assert response["X-Refusal-Message"].startswith("split: Unknown split")
    assert not Job.objects.exists()


@pytest.mark.parametrize(("field", "value"), [("include_votes", "yes"), ("include_seeds", "2")])
def test_a_bad_checkbox_value_is_refused_naming_the_field(client, project, lead, field, value):
    client.force_login(lead)
    response = client.post(reverse("version-build", args=[project.slug]), {field: value}, **HTMX)
    assert response.status_code == 400
    assert response["X-Refusal-Message"].startswith(f"{field}: ")
    assert not Job.objects.exists()
