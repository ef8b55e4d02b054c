"""The judge runner's pages: the leaderboard's run form and job card, and the judge configs."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.models import Job
from judging.models import JudgeConfig, JudgeRun, Scorecard
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import judge_config, runner_version

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def config_post(**extra) -> dict:
    data = {
        "name": "local-vl",
        "base_url": "http://127.0.0.1:8000/v1",
        "model": "qwen2-vl-7b",
        "api_key_env": "",
        "temperature": "0",
        "max_tokens": "512",
        "runs": "1",
        "orders": "both",
        "concurrency": "8",
        "timeout_seconds": "60",
        "retries": "3",
        "image_max_side": "1536",
        "currency": "USD",
    }
    data.update(extra)
    return data


def test_lead_runs_a_judge_from_the_leaderboard(
    client, lead, project, django_capture_on_commit_callbacks
):
    version = runner_version(project)
    client.force_login(lead)
    board = reverse("leaderboard", args=[project.slug, version.number])
    page = client.get(board).content.decode()
    assert "No judge is configured yet." in page
    with FakeOpenAI() as server:
        config = judge_config(server.url, orders="both")
        page = client.get(board).content.decode()
        assert 'id="runner"' in page and "fake-judge" in page
        start = reverse("judge-run-start", args=[project.slug, version.number])
        # Tasks run eagerly in the tests, once the job's row is committed.
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post(start, {"config": config.pk, "judge": "local judge"}, headers=HTMX)
        assert answer.status_code == 200
        job = Job.objects.get(params__runner=True)
        assert f'id="runner-job-{job.pk}"' in answer.content.decode()
        assert "Queued: local judge on v1" in answer.content.decode()
        job.refresh_from_db()
        assert job.status == Job.Status.SUCCEEDED, job.error
        assert len(server.requests) == 12
    status = client.get(reverse("judge-run-status", args=[project.slug, 1, job.pk]))
    html = status.content.decode()
    assert "hx-get" not in html.split("job-card")[0]  # finished: no more polling
    assert "Scored local judge: 12 calls (12 calls made, 0 cache hits)" in html
    assert reverse("scorecard", args=[project.slug, 1, "local judge"]) + "?split=open_ended" in html
    assert job.result["made"] == 12 and job.result["partial"] is False
    assert JudgeRun.objects.get(judge="local judge").job_id == job.pk
    card = Scorecard.objects.get(judge="local judge")
    assert card.figures["runner"]["position_consistency"]["value"] == 83.33
    # The leaderboard lists the judge and reopens the job's card.
    page = client.get(f"{board}?job={job.pk}").content.decode()
    assert ">local judge</a>" in page and f'id="runner-job-{job.pk}"' in page


def test_run_form_errors(client, lead, project):
    version = runner_version(project)
    client.force_login(lead)
    JudgeConfig.objects.create(name="c", base_url="http://127.0.0.1:9/v1", model="m")
    start = reverse("judge-run-start", args=[project.slug, version.number])
    answer = client.post(start, {"config": "999"}, headers=HTMX)
    assert answer.status_code == 400
    assert "Select a valid choice." in answer.content.decode()
    assert not Job.objects.exists()


def test_failed_run_shows_the_error(client, lead, project, django_capture_on_commit_callbacks):
    version = runner_version(project)
    client.force_login(lead)
    config = judge_config(
        "http://127.0.0.1:9/v1", api_key_env="JUDGE_KEY_NO_SUCH_VARIABLE", retries=0
    )
    start = reverse("judge-run-start", args=[project.slug, version.number])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(start, {"config": config.pk}, headers=HTMX)
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED
    status = client.get(reverse("judge-run-status", args=[project.slug, 1, job.pk]))
    assert (
        "the environment variable JUDGE_KEY_NO_SUCH_VARIABLE is not set" in status.content.decode()
    )


def test_configs_page_creates_and_edits(client, lead):
    client.force_login(lead)
    url = reverse("judge-configs")
    assert "No judge config yet" in client.get(url).content.decode()
    answer = client.post(url, config_post(api_key_env="JUDGE_KEY_OPENAI"))
    assert answer.status_code == 302
    config = JudgeConfig.objects.get()
    assert (config.model, config.orders, config.api_key_env, config.created_by) == (
        "qwen2-vl-7b",
        "both",
        "JUDGE_KEY_OPENAI",
        lead,
    )
    page = client.get(url).content.decode()
    assert "qwen2-vl-7b" in page and "JUDGE_KEY_OPENAI" in page
    edit = reverse("judge-config-edit", args=[config.pk])
    template = SimpleUploadedFile("mine.txt", b"$question\n$response_1\n$response_2\n")
    answer = client.post(edit, {**config_post(runs="3"), "template_file": template})
    assert answer.status_code == 302
    config.refresh_from_db()
    assert config.runs == 3 and config.template_name == "mine.txt"
    assert config.template_text.startswith("$question")


def test_config_errors_name_the_field(client, lead):
    client.force_login(lead)
    url = reverse("judge-configs")
    bad = SimpleUploadedFile("bad.txt", b"$question $answer\n")
    answer = client.post(
        url,
        {
            **config_post(api_key_env="sk-live-abc", temperature="5", concurrency="0"),
            "template_file": bad,
        },
    )
    assert answer.status_code == 400
    form = answer.context["form"]
    assert form.errors["api_key_env"] == [
        "Give the name of an environment variable (letters, digits and underscores, not "
        "starting with a digit), not the key itself."
    ]
    assert form.errors["temperature"] == ["Ensure this value is less than or equal to 2.0."]
    assert form.errors["concurrency"] == ["Ensure this value is greater than or equal to 1."]
    assert form.errors["template_file"][0].startswith(
        "line 1, field 'template': unknown placeholder $answer"
    )
    assert not JudgeConfig.objects.exists()
    page = answer.content.decode()
    assert "sk-live-abc" in page  # typed back into the field for correction, never stored


def test_annotator_sees_no_run_form(client, annotator, project):
    from annotation.services.projects import member_add

    version = runner_version(project)
    member_add(project=project, user=annotator)
    client.force_login(annotator)
    page = client.get(reverse("leaderboard", args=[project.slug, version.number]))
    assert page.status_code == 200
    assert 'id="runner"' not in page.content.decode()


def test_scorecard_page_shows_the_runner_figures(client, lead, project):
    from judging.runner.run import judge_run_execute

    version = runner_version(project)
    with FakeOpenAI() as server:
        config = judge_config(server.url, orders="both", budget_tokens=100_000)
        judge_run_execute(version=version, config=config, judge="paged", by=lead)
    client.force_login(lead)
    page = client.get(reverse("scorecard", args=[project.slug, 1, "paged"])).content.decode()
    assert "Judge runner" in page and "fake-vl-7b" in page
    assert "<strong>83.33%</strong>" in page
    assert "the two orders agree in 5 of 6 rows" in page
    assert '<strong>66.67%</strong> <span class="muted">in order AB (of 6)</span>' in page
    assert "Partial run" not in page


def test_a_run_whose_config_was_deleted_fails_clearly(
    lead, project, django_capture_on_commit_callbacks
):
    from judging.runner.start import judge_run_start

    version = runner_version(project)
    config = judge_config("http://127.0.0.1:9/v1")
    with django_capture_on_commit_callbacks(execute=True):
        job = judge_run_start(version=version, config=config, by=lead)
        config.delete()
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error == "the judge config of this run no longer exists"


def test_the_config_form_takes_the_provider_settings(client, lead):
    client.force_login(lead)
    url = reverse("judge-configs")
    page = client.get(url).content.decode()
    for label in ("API style", "Replicas", "Preset", "Chat template options"):
        assert label in page
    answer = client.post(
        url,
        config_post(
            api_style="azure",
            api_version="2024-10-21",
            reasoning_effort="low",
            replicas="http://127.0.0.1:8001/v1\n\n http://127.0.0.1:8002/v1 ",
            chat_template_kwargs='{"enable_thinking": true}',
            extra_body='{"top_k": 20}',
            retry_max_tokens="4096",
        ),
    )
    assert answer.status_code == 302
    config = JudgeConfig.objects.get()
    assert (config.api_style, config.api_version, config.reasoning_effort) == (
        "azure",
        "2024-10-21",
        "low",
    )
    assert config.replica_urls == ["http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"]
    assert config.chat_template_kwargs == {"enable_thinking": True}
    assert (config.extra_body, config.retry_max_tokens) == ({"top_k": 20}, 4096)
    edit = client.get(reverse("judge-config-edit", args=[config.pk])).content.decode()
    assert "http://127.0.0.1:8001/v1\nhttp://127.0.0.1:8002/v1" in edit


def test_the_config_form_refuses_unsafe_and_malformed_settings(client, lead):
    client.force_login(lead)
    answer = client.post(
        reverse("judge-configs"),
        config_post(
            name="bad",
            base_url="http://169.254.169.254/latest",
            replicas="http://user:pw@example.org/v1",
            extra_body="[1, 2]",
            api_key_env="DATABASE_URL",
        ),
    )
    assert answer.status_code == 400
    errors = answer.context["form"].errors
    assert "link-local" in errors["base_url"][0] or "metadata" in errors["base_url"][0]
    assert errors["replicas"][0].startswith("Replica 1 (http://user:pw@example.org/v1):")
    assert errors["extra_body"] == ['Give a JSON object, e.g. {"key": "value"}.']
    assert "JUDGE_KEY_" in errors["api_key_env"][0]
    assert not JudgeConfig.objects.exists()


def test_the_published_preset_on_the_form(client, lead):
    client.force_login(lead)
    url = reverse("judge-configs")
    refused = client.post(url, config_post(name="published", preset="published"))
    assert refused.status_code == 400
    assert "verifier fallback" in refused.context["form"].errors["verifier"][0]
    verifier = judge_config("http://127.0.0.1:8000/v1", name="small-verifier")
    answer = client.post(
        url, config_post(name="published", preset="published", verifier=str(verifier.pk))
    )
    assert answer.status_code == 302
    config = JudgeConfig.objects.get(name="published")
    assert (config.temperature, config.top_p, config.max_tokens, config.verifier) == (
        0.6,
        0.95,
        8192,
        verifier,
    )


def test_the_job_card_lists_truncated_answers(
    client, lead, project, django_capture_on_commit_callbacks
):
    version = runner_version(project, image_size=(64, 64))
    client.force_login(lead)
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=600) as server:
        config = judge_config(server.url, max_tokens=300, retry_max_tokens=None)
        start = reverse("judge-run-start", args=[project.slug, version.number])
        with django_capture_on_commit_callbacks(execute=True):
            client.post(start, {"config": config.pk}, headers=HTMX)
    job = Job.objects.get(params__runner=True)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.result["truncated"] == 6
    html = client.get(reverse("judge-run-status", args=[project.slug, 1, job.pk])).content.decode()
    assert "6 answers cut at the token budget before a verdict (truncated" in html
    assert "<code>p1__completeness</code> run 1, order AB: 300 tokens" in html
