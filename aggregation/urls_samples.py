from django.urls import path

from .views import samples

urlpatterns = [
    path("projects/<slug:slug>/samples/", samples.sample_list, name="samples"),
    path(
        "projects/<slug:slug>/samples/<int:sample_id>/",
        samples.sample_detail_view,
        name="sample-detail",
    ),
]
