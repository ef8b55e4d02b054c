"""Holistic mode: one overall verdict per sample, no criterion, its own template."""

from __future__ import annotations

import pytest

from annotation.models import Sample
from judging.models import JudgeCall
from judging.runner.holistic import holistic_judge
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import LONG, SHORT, judge_config, runner_version

pytestmark = pytest.mark.django_db


def test_holistic_verdicts_one_call_per_sample_and_order(project):
    runner_version(project)  # samples p1..p3 with images
    Sample.objects.filter(external_id="p1").update(response_a=LONG, response_b=SHORT)
    Sample.objects.filter(external_id="p2").update(response_a=SHORT, response_b=LONG)
    Sample.objects.filter(external_id="p3").update(response_a=SHORT, response_b=SHORT)
    samples = list(Sample.objects.filter(project=project).order_by("external_id"))
    with FakeOpenAI() as server:
        config = judge_config(server.url, orders="both", runs=3, seed=1)
        verdicts = holistic_judge(samples, config)
        assert len(server.requests) == 3 * 2 * 3
        text = server.requests[0].text()
        assert "better overall" in text and "Criterion" not in text
        assert server.requests[0].body["messages"][0]["content"][0]["type"] == "image_url"
        # Cached: asking again makes no call.
        again = holistic_judge(samples, config)
        assert len(server.requests) == 18
    by_id = {s.external_id: verdicts[s.pk] for s in samples}
    assert by_id["p1"].verdict == "model_a" and by_id["p1"].per_run == ["model_a"] * 3
    assert by_id["p2"].verdict == "model_b"
    assert by_id["p3"].verdict == "invalid"  # a tie: each order prefers its first response
    assert {k: v.verdict for k, v in again.items()} == {k: v.verdict for k, v in verdicts.items()}
    assert set(JudgeCall.objects.values_list("kind", flat=True)) == {"holistic"}
