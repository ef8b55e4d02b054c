"""The judge panel: every judge, both orders, one PanelLabel per formal (sample, criterion).

Two judges run on the runner's local test server (tests/judging/fake_openai.py), each its own
server on 127.0.0.1: ``fake-1`` prefers the longer response, and names Response 1 when both
are as long (a position bias: A in one order, B in the other); ``fake-2`` does the same except
on the hallucination criterion, where it prefers the shorter response, and on responses as
long as each other, where it prefers the one about a dog (no position bias).
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Criterion, PanelLabel, RoutingPolicy, Vote
from core.models import Job
from judging.runner.run import RunnerError
from judging.services.panel import panel_configs, panel_run_execute, panel_run_start
from tests.conftest import make_sample
from tests.judging.fake_openai import FakeOpenAI, default_answer, responses_in
from tests.judging.runner_data import LONG, SHORT, judge_config

pytestmark = pytest.mark.django_db

OPEN_ENDED = ["completeness", "visual-grounding", "hallucination", "expressiveness", "clarity"]


def shorter_on_hallucination(text: str) -> str:
    """Like the default judge, but prefers the shorter response on the hallucination criterion
    and the dog when both responses are as long."""
    found = responses_in(text)
    one, two = found.get("1", ""), found.get("2", "")
    if len(one) == len(two):
        better = "2" if "dog" in two else "1"
        return f"Response {better} has the dog.\n**Response {better} is better.**"
    if "Criterion: Factuality / No Hallucination" not in text:
        return default_answer(text)
    better = "1" if len(one) < len(two) else "2"
    return f"Response {better} says less.\n**Response {better} is better.**"


@pytest.fixture
def samples(project):
    long_a = make_sample(project, "s1", response_a=LONG, response_b=SHORT)
    long_b = make_sample(project, "s2", response_a=SHORT, response_b=LONG)
    even = make_sample(project, "s3", response_a=SHORT, response_b="A dog.")
    make_sample(project, "seed1", is_seed=True)  # calibration: never pre-labeled
    return long_a, long_b, even


def labels(project) -> dict[tuple[str, str], PanelLabel]:
    return {
        (p.sample.external_id, p.criterion.key): p
        for p in PanelLabel.objects.filter(sample__project=project).select_related(
            "sample", "criterion"
        )
    }


def test_panel_labels_for_scripted_judges_and_a_position_bias(project, samples):
    with FakeOpenAI() as one, FakeOpenAI(answer=shorter_on_hallucination) as two:
        first = judge_config(one.url, name="fake-1", orders="ab")  # asked in both anyway
        second = judge_config(two.url, name="fake-2", model="fake-vl-2")
        result = panel_run_execute(project=project, configs=[first, second])
        # 3 formal samples x 5 criteria x 2 orders per judge; the seed sample is left out.
        assert len(one.answered()) == 30 and len(two.answered()) == 30
        assert {r.body["model"] for r in two.answered()} == {"fake-vl-2"}
    got = labels(project)
    assert sorted(got) == sorted((s, c) for s in ("s1", "s2", "s3") for c in OPEN_ENDED)
    for key in OPEN_ENDED:
        if key == "hallucination":
            continue
        for sample, side in (("s1", "A"), ("s2", "B")):
            label = got[sample, key]
            assert (label.choice, label.unanimous, label.consistent, label.routable) == (
                side,
                True,
                True,
                True,
            )
            assert label.verdicts == {
                "fake-1": {"ab": side, "ba": side},
                "fake-2": {"ab": side, "ba": side},
            }
    # The judges disagree on hallucination: each is consistent, the panel is not unanimous.
    split = got["s1", "hallucination"]
    assert (split.choice, split.unanimous, split.consistent, split.routable) == (
        "",
        False,
        True,
        False,
    )
    assert split.verdicts == {"fake-1": {"ab": "A", "ba": "A"}, "fake-2": {"ab": "B", "ba": "B"}}
    # Equal lengths: fake-1 names Response 1 in each order, so A then B (position-biased);
    # fake-2 names B in both. Not consistent, not unanimous, not routable.
    biased = got["s3", "completeness"]
    assert biased.verdicts == {"fake-1": {"ab": "A", "ba": "B"}, "fake-2": {"ab": "B", "ba": "B"}}
    assert (biased.choice, biased.unanimous, biased.consistent, biased.routable) == (
        "",
        False,
        False,
        False,
    )
    assert biased.judges == ["fake-1", "fake-2"]
    assert (result.labels, result.routable, result.calls, result.made) == (15, 8, 60, 60)
    assert result.routable == sum(p.routable for p in got.values())


def test_a_rerun_asks_nothing_again_and_replaces_the_labels(project, samples):
    with FakeOpenAI() as server:
        config = judge_config(server.url, name="fake-1")
        panel_run_execute(project=project, configs=[config])
        before = set(PanelLabel.objects.values_list("pk", flat=True))
        again = panel_run_execute(project=project, configs=[config])
        assert len(server.requests) == 30
    assert (again.made, again.cached, again.labels) == (0, 30, 15)
    assert PanelLabel.objects.count() == 15
    assert not before & set(PanelLabel.objects.values_list("pk", flat=True))
    # A panel of one judge: routable where it is consistent (s1 and s2), never on s3.
    assert PanelLabel.objects.filter(routable=True).count() == 10
    assert not PanelLabel.objects.filter(sample__external_id="s3", routable=True).exists()


def test_failed_calls_leave_the_item_unroutable_and_a_rerun_resumes(project, samples):
    with FakeOpenAI() as server:
        config = judge_config(server.url, name="fake-1", retries=0, concurrency=1)
        server.fail_next(500, times=2)
        first = panel_run_execute(project=project, configs=[config])
        assert first.failed == 2 and first.made == 30
        assert first.routable == 9  # the first item's two orders failed
        label = labels(project)["s1", "completeness"]
        assert label.verdicts == {"fake-1": {"ab": None, "ba": None}} and not label.routable
        second = panel_run_execute(project=project, configs=[config])
        assert len(server.requests) == 32  # only the 2 failed calls are asked again
    assert (second.failed, second.made, second.cached, second.routable) == (0, 2, 28, 10)


def test_the_panel_job_and_the_command(project, samples, lead, django_capture_on_commit_callbacks):
    with FakeOpenAI() as server:
        judge_config(server.url, name="fake-1")
        with django_capture_on_commit_callbacks(execute=True):
            job = panel_run_start(project=project, configs=panel_configs(["fake-1"]), by=lead)
        job.refresh_from_db()
        assert job.kind == Job.Kind.PANEL and job.status == Job.Status.SUCCEEDED, job.error
        assert job.result["labels"] == 15 and job.result["routable"] == 10
        assert (job.done, job.total) == (30, 30)
        assert set(PanelLabel.objects.values_list("job_id", flat=True)) == {job.pk}
        call_command("run_panel", project.slug, "--judge", "fake-1", "--no-progress")
        assert len(server.requests) == 30  # the command found every answer cached
    assert set(PanelLabel.objects.values_list("job_id", flat=True)) == {None}
    with pytest.raises(CommandError, match="no judge config named 'nope'"):
        call_command("run_panel", project.slug, "--judge", "nope")
    with pytest.raises(CommandError, match="no project"):
        call_command("run_panel", "missing", "--judge", "fake-1")


def test_a_project_without_formal_samples_is_refused(project):
    make_sample(project, "seed1", is_seed=True)
    config = judge_config("http://127.0.0.1:9/v1", name="fake-1")
    with pytest.raises(RunnerError, match="no formal samples"):
        panel_run_execute(project=project, configs=[config])
    assert Criterion.objects.filter(project=project).exists()


def test_no_new_panel_once_routed_votes_exist(project, samples, annotator):
    """The panel decided which items one annotator verifies: new labels would rewrite that."""
    config = judge_config("http://127.0.0.1:9/v1", name="fake-1")
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.save(update_fields=["routing_policy"])
    criterion = Criterion.objects.filter(project=project).first()
    Vote.objects.create(
        sample=samples[0], criterion=criterion, annotator=annotator, choice="A", rationale="x" * 20
    )
    with pytest.raises(RunnerError, match="routing is on and formal votes exist") as refused:
        panel_run_start(project=project, configs=[config], by=None)
    assert refused.value.field == "configs"
    with pytest.raises(RunnerError, match="routing is on"):
        panel_run_execute(project=project, configs=[config])
    assert not Job.objects.filter(kind=Job.Kind.PANEL).exists()
    project.routing_policy = RoutingPolicy.OFF  # routing off: the panel is only a reference
    project.save(update_fields=["routing_policy"])
    result = panel_run_execute(project=project, configs=[config])  # no server: calls fail
    assert result.labels == PanelLabel.objects.filter(sample__project=project).count() > 0
    assert result.routable == 0


def test_the_panel_page_starts_the_job_and_shows_what_it_wrote(
    client, lead, project, samples, django_capture_on_commit_callbacks
):
    client.force_login(lead)
    url = f"/projects/{project.slug}/panel/"
    page = client.get(url)
    assert page.status_code == 200
    assert "No judge is configured yet" in page.content.decode()
    refused = client.post(url, {})
    assert refused.status_code == 400
    with FakeOpenAI() as server:
        judge_config(server.url, name="fake-1")
        judge_config(server.url, name="fake-2", model="fake-vl-2")
        page = client.get(url).content.decode()
        assert 'value="fake-1"' in page and 'value="fake-2"' in page
        assert "Tick at least one judge config" in client.post(url, {}).content.decode()
        with django_capture_on_commit_callbacks(execute=True):
            started = client.post(url, {"judges": ["fake-1", "fake-2"]})
        assert started.status_code == 302
        job = Job.objects.get(kind=Job.Kind.PANEL)
        assert started["Location"] == f"{url}?job={job.pk}#panel-job"
        assert job.params["judges"] == ["fake-1", "fake-2"]
        assert len(server.answered()) == 60
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    card = client.get(f"{url}jobs/{job.pk}/").content.decode()
    assert "Succeeded" in card and 'id="panel-summary"' in card and "hx-swap-oob" in card
    assert 'id="panel-recent"' in card
    page = client.get(f"{url}?job={job.pk}").content.decode()
    assert '15</div><div class="label">items pre-labeled of 15' in page
    assert '10</div><div class="label">routable (67%): 5 A, 5 B' in page
    assert "by the panel fake-1, fake-2" in page
    assert client.get(f"{url}jobs/999999/").status_code == 404
