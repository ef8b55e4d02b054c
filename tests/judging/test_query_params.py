"""Query parameters of the upload pages and the leaderboard: a bad value falls back, never a 500."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.judging.web_data import make_version

pytestmark = pytest.mark.django_db

BAD_JOB_IDS = ["abc", "-1", "0", "²", "1.5", "9" * 30, ""]


def pages(project) -> list[str]:
    version = make_version(project)
    return [
        reverse("import-upload", args=[project.slug]),
        reverse("benchmark-import", args=[project.slug]),
        reverse("predictions-upload", args=[project.slug, version.number]),
    ]


@pytest.mark.parametrize("value", BAD_JOB_IDS)
def test_a_bad_job_id_shows_the_page_without_a_job(client, project, lead, value):
    client.force_login(lead)
    for url in pages(project):
        response = client.get(url, {"job": value})
        assert response.status_code == 200, url
        assert response.context["job"] is None, url


@pytest.mark.parametrize(
    "query", [{"split": "nowhere"}, {"sort": "x" * 500}, {"sort": "-nope", "split": "²"}]
)
def test_bad_leaderboard_parameters_fall_back_to_the_default(client, project, lead, query):
    version = make_version(project)
    client.force_login(lead)
    url = reverse("leaderboard", args=[project.slug, version.number])
    assert client.get(url, query).status_code == 200
