from django.http import HttpRequest

from core.permissions import is_annotator, is_lead


def roles(request: HttpRequest) -> dict[str, bool]:
    user = getattr(request, "user", None)
    return {
        "user_is_lead": bool(user and is_lead(user)),
        "user_is_annotator": bool(user and is_annotator(user)),
    }
