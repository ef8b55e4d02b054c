from django.urls import path

from .views import criteria

urlpatterns = [
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
