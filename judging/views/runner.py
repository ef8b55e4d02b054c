"""The judge runner's pages: run a judge from the leaderboard, its live job card, the configs."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from core.http import queue_unavailable
from core.jobs import JobQueueUnavailable
from core.models import Job
from core.permissions import lead_required

from ..forms import JudgeConfigForm, JudgeRunForm
from ..models import JudgeConfig
from ..runner.run import RunnerError
from ..runner.start import judge_run_start as runner_start
from ..selectors import leaderboard as selectors
from ..selectors.runner import run_form_context


@lead_required
@require_POST
def judge_run_start(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Start the judge runner on this version (the leaderboard's form)."""
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    form = JudgeRunForm(request.POST)
    job = None
    if form.is_valid():
        try:
            job = runner_start(
                version=version,
                config=form.cleaned_data["config"],
                judge=form.cleaned_data["judge"],
                by=request.user,
            )
        except RunnerError as exc:
            form.add_error(None, str(exc))
        except JobQueueUnavailable as exc:
            form.add_error(None, str(exc))
            page = render(
                request,
                "judging/leaderboard.html#runner-panel",
                run_form_context(version=version, form=form, job=None),
            )
            return queue_unavailable(request, page)
    if job is not None and not request.htmx:
        return redirect(f"{reverse('leaderboard', args=[slug, number])}?job={job.pk}#runner")
    context = run_form_context(version=version, form=JudgeRunForm() if job else form, job=job)
    status = 200 if job is not None or form.is_valid() else 400
    return render(request, "judging/leaderboard.html#runner-panel", context, status=status)


@lead_required
@require_safe
def judge_run_status(request: HttpRequest, slug: str, number: int, job_id: int) -> HttpResponse:
    """The runner job's card, polled while it runs, with links to the scorecard once done."""
    version = selectors.version_get_for_user(user=request.user, slug=slug, number=number)
    job = get_object_or_404(
        Job, pk=job_id, kind=Job.Kind.SCORE_JUDGE, project=version.project, params__runner=True
    )
    response = render(
        request, "judging/leaderboard.html#runner-job", {"run_job": job, "version": version}
    )
    if job.status == Job.Status.SUCCEEDED:
        response["HX-Trigger"] = "judge-run-done"  # the leaderboard reloads its table
    return response


def _configs_context(form: JudgeConfigForm, editing: JudgeConfig | None = None) -> dict:
    return {
        "configs": JudgeConfig.objects.select_related("verifier"),
        "form": form,
        "editing": editing,
    }


@lead_required
@require_http_methods(["GET", "POST"])
def judge_configs(request: HttpRequest) -> HttpResponse:
    """The judge configs: the list and a form for a new one."""
    if request.method == "GET":
        return render(request, "judging/configs.html", _configs_context(JudgeConfigForm()))
    form = JudgeConfigForm(request.POST, request.FILES)
    if form.is_valid():
        config = form.save(commit=False)
        config.created_by = request.user
        config.save()
        messages.success(request, f"Saved the judge config “{config.name}”.")
        return redirect("judge-configs")
    return render(request, "judging/configs.html", _configs_context(form), status=400)


@lead_required
@require_http_methods(["GET", "POST"])
def judge_config_edit(request: HttpRequest, config_id: int) -> HttpResponse:
    """Edit one judge config."""
    config = get_object_or_404(JudgeConfig, pk=config_id)
    if request.method == "GET":
        form = JudgeConfigForm(instance=config)
        return render(request, "judging/configs.html", _configs_context(form, config))
    form = JudgeConfigForm(request.POST, request.FILES, instance=config)
    if form.is_valid():
        form.save()
        messages.success(request, f"Saved the judge config “{config.name}”.")
        return redirect("judge-configs")
    return render(request, "judging/configs.html", _configs_context(form, config), status=400)
