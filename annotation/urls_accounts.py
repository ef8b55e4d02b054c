from django.urls import path

from .views import accounts

urlpatterns = [
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
]
