"""Early stopping and routing on the lead's pages: votes saved, provenance badges, settings."""

from __future__ import annotations

from decimal import Decimal

import pytest

from aggregation.services.aggregate import project_aggregate
from annotation.models import PanelLabel, RoutingPolicy
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP
from tests.aggregation.votes import cast_all, criteria_of
from tests.conftest import make_sample, make_user
from tests.e2e.conftest import login, screenshot
from tests.e2e.test_phone_layout import OVERFLOW

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def assisted():
    make_user("lead", LEAD_GROUP)
    project = project_create(name="Assisted study", slug="assisted")
    project.early_stopping = True
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.audit_share = Decimal("0")
    project.save()
    users = [make_user(f"ann{i}", ANNOTATOR_GROUP) for i in range(1, 4)]
    for user in users:
        member_add(project=project, user=user)
    c = criteria_of(project)
    for i in range(4):
        sample = make_sample(project, f"as-{i}")
        PanelLabel.objects.create(
            sample=sample,
            criterion=c[0],
            choice="A",
            unanimous=True,
            consistent=True,
            routable=True,
        )
        cast_all(sample, c[0], users, "A" if i % 2 == 0 else "BBB")
        cast_all(sample, c[1], users, "AB")
        cast_all(sample, c[2], users, "BBB")
    project_aggregate(project=project, n_boot=0)
    return project


@pytest.mark.parametrize("viewport", [(390, 844), (1440, 900)], ids=["phone", "desktop"])
def test_assisted_pages_show_savings_and_provenance(assisted, new_page, viewport):
    page = new_page(viewport)
    login(page, "lead")
    tag = f"{viewport[0]}"
    page.goto("/projects/assisted/dashboard/")
    card = page.locator("#fig-saved")
    assert card.is_visible()
    assert "Votes saved" in card.inner_text()
    card.scroll_into_view_if_needed()
    screenshot(page, f"assisted-dashboard-{tag}")
    page.goto("/projects/assisted/review/")
    assert page.locator(".prov-panel_human").count() == 2
    assert page.locator(".prov-panel_overruled").count() == 2
    page.select_option("#f-provenance", "panel_overruled")
    page.wait_for_function("() => document.querySelectorAll('.prov-panel_human').length === 0")
    assert page.locator(".prov-panel_overruled").count() == 2
    screenshot(page, f"assisted-review-{tag}")
    page.goto("/projects/assisted/settings/")
    assert page.locator("#id_routing_policy").input_value() == "panel_verifier"
    assert page.locator("#id_early_stopping").is_checked()
    page.locator("#id_audit_seed").scroll_into_view_if_needed()
    screenshot(page, f"assisted-settings-{tag}")
    for path in ("dashboard", "review", "settings"):
        page.goto(f"/projects/assisted/{path}/")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport[0], (path, width, page.evaluate(OVERFLOW))
