"""The home page leads each role to its work; the project page to the project's screens."""

from annotation.services.projects import member_add


def test_anonymous_goes_to_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_annotator_sees_own_projects_with_labeling_link(client, project, annotator):
    member_add(project=project, user=annotator)
    client.force_login(annotator)
    page = client.get("/").content.decode()
    assert "Test project" in page
    assert f'href="/projects/{project.slug}/label/"' in page
    assert "Start calibration" in page
    assert "/dashboard/" not in page


def test_lead_sees_project_table_and_lead_links(client, project, lead):
    client.force_login(lead)
    page = client.get("/").content.decode()
    assert f'href="/projects/{project.slug}/dashboard/"' in page
    assert f'href="/projects/{project.slug}/review/"' in page
    detail = client.get(f"/projects/{project.slug}/").content.decode()
    for path in ("dashboard", "review", "members", "import", "versions", "settings"):
        assert f'href="/projects/{project.slug}/{path}/"' in detail
    assert "Completeness &amp; Coverage" in detail


def test_project_page_needs_membership(client, project, annotator, outsider):
    client.force_login(outsider)
    assert client.get(f"/projects/{project.slug}/").status_code == 403
    member_add(project=project, user=annotator)
    client.force_login(annotator)
    page = client.get(f"/projects/{project.slug}/").content.decode()
    assert f'href="/projects/{project.slug}/label/"' in page
    assert f'href="/projects/{project.slug}/dashboard/"' not in page
