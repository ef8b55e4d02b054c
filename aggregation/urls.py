from django.urls import include, path

urlpatterns = [
    path("", include("aggregation.urls_jobs")),
    path("", include("aggregation.urls_review")),
    path("", include("aggregation.urls_export")),
    path("", include("aggregation.urls_samples")),
    path("", include("aggregation.urls_activity")),
]
