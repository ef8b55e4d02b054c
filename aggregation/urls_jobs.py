from django.urls import path

from .views import jobs

urlpatterns = [
    path(
        "projects/<slug:slug>/aggregate/",
        jobs.aggregation_start,
        name="aggregation-start",
    ),
]
