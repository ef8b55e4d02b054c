"""Pages of the judging app: the leaderboard, scorecards and the predictions upload."""

from django.urls import path

from .views import board, calls, leaderboard, panel, runner

_VERSION = "projects/<slug:slug>/versions/<int:number>/"

urlpatterns = [
    path(
        "projects/<slug:slug>/leaderboard/",
        board.leaderboard_latest,
        name="leaderboard-latest",
    ),
    path(f"{_VERSION}leaderboard/", leaderboard.leaderboard, name="leaderboard"),
    path(
        f"{_VERSION}leaderboard.<str:fmt>",
        board.leaderboard_export,
        name="leaderboard-export",
    ),
    path(f"{_VERSION}compare/", board.judges_compare_page, name="judge-compare"),
    path(
        f"{_VERSION}predictions/upload/", leaderboard.predictions_upload, name="predictions-upload"
    ),
    path(
        f"{_VERSION}predictions/jobs/<int:job_id>/",
        leaderboard.predictions_upload_status,
        name="predictions-upload-status",
    ),
    path(
        f"{_VERSION}runs/<int:run_id>/delete/",
        leaderboard.judge_run_delete,
        name="judge-run-delete",
    ),
    path(f"{_VERSION}judge-runs/", runner.judge_run_start, name="judge-run-start"),
    path(f"{_VERSION}judge-runs/<int:job_id>/", runner.judge_run_status, name="judge-run-status"),
    path(
        f"{_VERSION}judge-runs/<int:run_id>/calls/",
        calls.judge_run_calls,
        name="judge-run-calls",
    ),
    path("projects/<slug:slug>/panel/", panel.panel_page, name="judge-panel"),
    path("projects/<slug:slug>/panel/jobs/<int:job_id>/", panel.panel_job, name="judge-panel-job"),
    path("judges/configs/", runner.judge_configs, name="judge-configs"),
    path("judges/configs/<int:config_id>/", runner.judge_config_edit, name="judge-config-edit"),
    # Judge names may hold a slash (organisation/model), so the judge is the last segment.
    path(f"{_VERSION}leaderboard/<path:judge>/", leaderboard.scorecard, name="scorecard"),
]
