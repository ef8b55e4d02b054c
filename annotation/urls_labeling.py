from django.urls import path

from .views import calibration, labeling

urlpatterns = [
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
]
