"""The dashboard's alerts, throughput, stale marking, greyed small-sample κ and drill-down."""

# The hand-built dataset is test_dashboard's ``data`` fixture, imported so that both files
# read the same figures; pytest injects it by name, which ruff takes for a redefinition.
# ruff: noqa: F811

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from aggregation.models import AgreementSnapshot
from aggregation.presenters.activity import dashboard_alerts
from aggregation.presenters.dashboard import dashboard_present, stat_display
from aggregation.selectors.activity import throughput, votes_since
from aggregation.selectors.dashboard import dashboard_figures
from annotation.models import Criterion, Vote
from tests.aggregation.test_dashboard import data, stat, vote  # noqa: F401
from tests.conftest import make_sample


def test_throughput_counts_votes_per_day_per_annotator(project, data):
    a1, a2, a3 = data["users"]
    t = throughput(project=project, days=14)
    assert t.days[-1] == timezone.localdate() and len(t.days) == 14
    assert t.series[a1.username][-1] == 7  # 7 formal votes today; the seed vote is not formal
    assert t.series[a2.username][-1] == 5
    assert t.series[a3.username][-1] == 3 and t.series[a3.username][-3] == 2
    assert t.totals[-1] == 15 and sum(t.totals) == 17
    assert t.user_ids[a1.username] == a1.pk


def test_votes_since_the_snapshot_mark_the_figures_stale(client, project, data, lead):
    snap = AgreementSnapshot.objects.get(project=project)
    assert votes_since(project=project, since=snap.computed_at) == 0
    a1 = data["users"][0]
    late = make_sample(project, "late")
    vote(late, data["crits"][0], a1, "B")
    figures = dashboard_figures(project=project)
    assert figures.stale_votes == 1
    client.force_login(lead)
    html = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert "1 vote cast or revised since the last aggregation" in html
    assert "do not include it yet" in html
    assert html.count('<span class="badge warn">out of date</span>') == 3
    AgreementSnapshot.objects.filter(project=project).update(
        computed_at=timezone.now() + timedelta(seconds=1)
    )
    html = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert "out of date" not in html


def test_kappa_on_few_items_is_greyed_with_its_count(client, project, data, lead):
    assert stat_display(stat(0.9), items=2)["few"] is True
    assert stat_display(stat(0.9, items=12))["few"] is False
    client.force_login(lead)
    html = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    # The first criterion's figures stand on 2 items; the pair shares 5.
    assert '<span class="statv few" title="only 2 items: too few to read' in html
    assert "0.90 <small>n=2</small>" in html
    assert 'class="num few" title="ann1 × ann2: 5 shared items, too few to read"' in html
    assert "too few to read" in html and 'fill="#f3f4f6"' in html  # the heat map cell is grey


def test_no_internal_field_name_is_shown(client, project, data, lead):
    AgreementSnapshot.objects.filter(project=project).update(
        figures={
            **AgreementSnapshot.objects.get(project=project).figures,
            "cohen": stat(
                0.61,
                [0.5, 0.7],
                pairs_used=3,
                pairs_skipped=1,
                min_overlap=20,
                weighted_value=0.64,
                weighting="unweighted mean over annotator pairs; weighted_value: overlap-weighted",
                items=40,
            ),
        }
    )
    client.force_login(lead)
    html = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert "weighted_value" not in html and "_" not in html.split("h-agreement")[1][:1500]
    assert "mean over pairs, 0.64 when weighted by shared items" in html


def test_alerts_for_the_tie_cap_and_low_agreement(project, data):
    a1, a2, a3 = data["users"]
    snap = AgreementSnapshot.objects.get(project=project)
    snap.figures["per_annotator"] = {
        a1.username: {"cohen_vs_others": stat(0.21, items=40), "items": 40},
        a3.username: {"cohen_vs_others": stat(0.1, items=4), "items": 4},  # too few: no alert
    }
    snap.save()
    figures = dashboard_present(dashboard_figures(project=project))
    alerts = dashboard_alerts(figures.annotators, figures.agreement, cap=project.tie_cap)
    by_user = {}
    for alert in alerts:
        by_user.setdefault(alert["username"], []).append(alert)
    # a2: 2 ties in 5 votes is far over 10%; a1: 1 tie in 7 votes is over it too.
    assert by_user[a2.username][0]["text"] == (
        "is at the tie cap: 2 ties in 5 votes (cap 10%); further ties are refused until more "
        "votes are cast."
    )
    assert by_user[a2.username][0]["level"] == "bad"
    assert by_user[a1.username][0]["text"].startswith("is at the tie cap: 1 tie in 7 votes")
    low = [a for a in by_user[a1.username] if "agrees little" in a["text"]]
    assert low[0]["text"] == (
        "agrees little with the others on Open-ended: Cohen's κ 0.21 over 40 items (below 0.4)."
    )
    assert not any("agrees little" in a["text"] for a in by_user.get(a3.username, []))


def test_near_the_cap_is_a_warning(project, annotators):
    from aggregation.presenters.activity import dashboard_alerts as alerts_of

    row = {
        "id": 1,
        "username": "ann1",
        "ties": 4,
        "done": 45,
        "tie_cap_used": 4 / 4.5,
        "agreement": [],
    }
    (alert,) = alerts_of([row], [], cap=project.tie_cap)
    assert (alert["level"], alert["text"]) == (
        "warn",
        "is near the tie cap: 4 ties in 45 votes (cap 10%).",
    )


def test_the_dashboard_shows_throughput_and_links_to_the_drill_down(client, project, data, lead):
    a1 = data["users"][0]
    client.force_login(lead)
    html = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    drill = reverse("annotator-votes", args=[project.slug, a1.pk])
    assert f'href="{drill}"' in html
    today = timezone.localdate().isoformat()
    assert f'href="{drill}?day={today}">7</a>' in html
    assert "Formal votes per day per annotator" in html and "chart-lines" in html


def test_the_drill_down_lists_an_annotators_votes(client, project, data, lead):
    a3 = data["users"][2]
    client.force_login(lead)
    url = reverse("annotator-votes", args=[project.slug, a3.pk])
    html = client.get(url).content.decode()
    assert "ann3&#x27;s votes" in html or "ann3's votes" in html
    assert "5 votes, 0 ties" in html
    s1 = data["samples"][0]
    assert reverse("sample-detail", args=[project.slug, s1.pk]) in html
    two_days_ago = (timezone.localdate() - timedelta(days=2)).isoformat()
    html = client.get(url + f"?day={two_days_ago}").content.decode()
    assert "2 votes, 0 ties" in html
    html = client.get(url + "?day=yesterday").content.decode()
    assert "day: Enter a valid date. It was left out." in html and "5 votes" in html


def test_the_drill_down_pages_by_id(client, project, annotators, lead):
    crits = list(Criterion.objects.filter(project=project, split="open_ended"))
    a1 = annotators[0]
    for i in range(60):
        vote(make_sample(project, f"p{i}"), crits[0], a1)
    client.force_login(lead)
    url = reverse("annotator-votes", args=[project.slug, a1.pk])
    first = client.get(url).context
    assert len(first["votes"]) == 50 and first["total"] == 60
    second = client.get(url + f"?before={first['next_before']}").context
    assert len(second["votes"]) == 10 and second["next_before"] is None
    ids = [v.pk for v in first["votes"]] + [v.pk for v in second["votes"]]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 60 == Vote.objects.count()


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_only_the_lead_drills_down(client, project, data, outsider, who):
    a1 = data["users"][0]
    client.force_login(a1 if who == "annotator" else outsider)
    response = client.get(reverse("annotator-votes", args=[project.slug, a1.pk]))
    assert response.status_code == 403 and b"rationale" not in response.content


def test_a_stranger_has_no_drill_down(client, project, data, lead, outsider):
    client.force_login(lead)
    assert (
        client.get(reverse("annotator-votes", args=[project.slug, outsider.pk])).status_code == 404
    )


def test_a_running_aggregation_says_the_figures_will_redraw(client, project, data, lead):
    from core.jobs import job_create
    from core.models import Job

    job_create(kind=Job.Kind.AGGREGATE, project=project, created_by=lead)
    client.force_login(lead)
    html = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert "The aggregation is running; the figures below redraw when it ends." in html
