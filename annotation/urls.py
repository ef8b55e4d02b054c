from django.urls import path

from .views import (
    accounts,
    calibration,
    criteria,
    imports,
    labeling,
    members,
    project_settings,
    projects,
    reports,
)

urlpatterns = [
    path("", projects.home, name="home"),
    # Before the project pattern, which would read "new" as a project's address.
    path("projects/new/", accounts.project_new, name="project-new"),
    path("projects/<slug:slug>/", projects.project_detail, name="project-detail"),
    path("projects/<slug:slug>/guidelines/", projects.guidelines, name="guidelines"),
    path(
        "projects/<slug:slug>/settings/",
        project_settings.project_settings,
        name="project-settings",
    ),
    path(
        "projects/<slug:slug>/criteria/<int:criterion_id>/",
        project_settings.criterion_edit,
        name="criterion-edit",
    ),
    path("projects/<slug:slug>/import/", imports.import_upload, name="import-upload"),
    path("projects/<slug:slug>/import/jobs/<int:job_id>/", imports.import_job, name="import-job"),
    path("projects/<slug:slug>/members/", members.members, name="members"),
    path("projects/<slug:slug>/members/add/", members.member_add_view, name="member-add"),
    path(
        "projects/<slug:slug>/members/<int:member_id>/remove/",
        members.member_remove_view,
        name="member-remove",
    ),
    path(
        "projects/<slug:slug>/slots/<int:slot_id>/reassign/",
        members.slot_reassign_view,
        name="slot-reassign",
    ),
    path("projects/<slug:slug>/label/", labeling.label, name="label"),
    path("projects/<slug:slug>/label/back/", labeling.label_back, name="label-back"),
    path(
        "projects/<slug:slug>/label/<int:sample_id>/<int:criterion_id>/",
        labeling.label_item,
        name="label-item",
    ),
    path("projects/<slug:slug>/label/skip/", labeling.label_skip, name="label-skip"),
    path("projects/<slug:slug>/label/report/", labeling.report_problem, name="report-problem"),
    path("projects/<slug:slug>/calibration/", calibration.calibration, name="calibration"),
    path(
        "projects/<slug:slug>/calibration/members/<int:member_id>/calibrated/",
        calibration.calibration_mark,
        name="calibration-mark",
    ),
    path(
        "projects/<slug:slug>/calibration/members/<int:member_id>/round/",
        calibration.calibration_round,
        name="calibration-round",
    ),
    path(
        "projects/<slug:slug>/calibration/reference/",
        calibration.reference_set,
        name="reference-set",
    ),
    path("projects/<slug:slug>/reports/", reports.reports, name="reports"),
    path(
        "projects/<slug:slug>/reports/<int:report_id>/close/",
        reports.report_close_view,
        name="report-close",
    ),
    path("projects/<slug:slug>/members/invite/", accounts.member_invite, name="member-invite"),
    path(
        "projects/<slug:slug>/members/<int:member_id>/invite/",
        accounts.member_invite_again,
        name="member-invite-again",
    ),
    path(
        "accounts/invite/<uidb64>/<token>/",
        accounts.invite_accept,
        name="invite-accept",
    ),
    path("projects/<slug:slug>/criteria/add/", criteria.criterion_add_view, name="criterion-add"),
    path(
        "projects/<slug:slug>/criteria/<int:criterion_id>/remove/",
        criteria.criterion_remove_view,
        name="criterion-remove",
    ),
    path(
        "projects/<slug:slug>/criteria/<int:criterion_id>/move/",
        criteria.criterion_move_view,
        name="criterion-move",
    ),
]
