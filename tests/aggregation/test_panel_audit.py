"""The dashboard's judge panel section: the panel against the humans on the audit share."""

from __future__ import annotations

from html import escape

import pytest

from aggregation.selectors.panel_audit import panel_audit_figures
from annotation.audit import in_audit
from annotation.models import PanelLabel, Project
from tests.aggregation.votes import cast_all, criteria_of
from tests.conftest import make_sample

pytestmark = pytest.mark.django_db


def panel(sample, criterion, choice: str) -> PanelLabel:
    """A routable panel label naming ``choice``, or a non-routable one when ``choice`` is ''."""
    return PanelLabel.objects.create(
        sample=sample,
        criterion=criterion,
        choice=choice,
        unanimous=bool(choice),
        consistent=bool(choice),
        routable=bool(choice),
        judges=["j1"],
    )


@pytest.fixture
def world(project: Project, annotators):
    Project.objects.filter(pk=project.pk).update(audit_share="1.000")
    project.refresh_from_db()
    crit = criteria_of(project)
    first, second = crit[0], crit[1]
    s1, s2, s3, s4 = (make_sample(project, f"s{i}") for i in range(1, 5))
    trio = annotators[:3]
    # Criterion 1: kept A, kept B, kept A (A A tie), split; criterion 2: kept A on s1 only.
    cast_all(s1, first, trio, "AAA")
    cast_all(s2, first, trio, "BBB")
    cast_all(s3, first, trio, "AAt")
    cast_all(s4, first, trio, "ABA")
    cast_all(s1, second, trio, "AAA")
    cast_all(s2, second, trio[:2], "BB")  # 2 votes: not a full audit item, left out
    # The panel: right on s1 and s2, wrong on s3, names A on the split s4 (its first vote is A,
    # so routing would have kept A where the full protocol drops the item); no side on s1/2nd.
    panel(s1, first, "A")
    panel(s2, first, "B")
    panel(s3, first, "B")
    panel(s4, first, "A")
    panel(s1, second, "")
    panel(s2, second, "B")
    return project, first, second


def test_agreement_per_criterion_and_the_counterfactual(world):
    project, first, second = world
    figures = panel_audit_figures(project=project, n_boot=200)
    assert (figures.audit_samples, figures.items, figures.panel_items) == (4, 5, 5)
    rows = {r.label.split(" · ")[1]: r for r in figures.rows}
    assert set(rows) == {first.name, second.name}
    one = rows[first.name]
    # Kept labels: s1 A, s2 B, s3 A; the panel names a side on all three, agrees on two.
    assert (one.labels, one.covered, one.agreed) == (3, 3, 2)
    assert one.agreement == pytest.approx(2 / 3) and one.coverage == 1.0
    assert one.ci is not None and one.ci[0] <= 2 / 3 <= one.ci[1]
    two = rows[second.name]
    assert (two.labels, two.covered, two.agreed, two.agreement, two.ci) == (1, 0, 0, None, None)
    assert (figures.overall.labels, figures.overall.covered, figures.overall.agreed) == (4, 3, 2)
    c = figures.counterfactual
    # Routable audit items: s1, s2, s3, s4 on the first criterion. The first vote agrees on
    # s1 (A), s2 (B) and s4 (A); on s3 it names A against the panel's B (the full label stands).
    assert (c.items, c.routable, c.verifier_agreed) == (5, 4, 3)
    assert (c.differ, c.differ_dropped, c.differ_side) == (1, 1, 0)


def test_only_the_audit_share_counts(world):
    project, *_ = world
    Project.objects.filter(pk=project.pk).update(audit_share="0.500", audit_seed=3)
    project.refresh_from_db()
    drawn = [e for e in ("s1", "s2", "s3", "s4") if in_audit(3, e, 0.5)]
    figures = panel_audit_figures(project=project, n_boot=50)
    assert figures.audit_samples == len(drawn)
    Project.objects.filter(pk=project.pk).update(audit_share="0.000")
    project.refresh_from_db()
    none = panel_audit_figures(project=project)
    assert (none.audit_samples, none.items, none.has_panel) == (0, 0, False)


def test_the_dashboard_shows_the_section(client, lead, world):
    project, first, _ = world
    client.force_login(lead)
    page = client.get(f"/projects/{project.slug}/dashboard/").content.decode()
    assert 'id="fig-panel-audit"' in page
    assert '1</div><div class="label">kept label would have differed' in page
    assert escape(f"Open-ended · {first.name}") in page
    assert "0.67" in page and "<svg" in page.split('id="fig-panel-audit"')[1]
    PanelLabel.objects.all().delete()
    page = client.get(f"/projects/{project.slug}/dashboard/").content.decode()
    assert "No panel label on the audit share yet" in page
