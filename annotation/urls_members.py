from django.urls import path

from .views import members

urlpatterns = [
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
]
