from django.contrib import admin

from .models import ApiToken, Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["pk", "kind", "project", "status", "done", "total", "attempts", "created_at"]
    list_filter = ["kind", "status"]
    readonly_fields = ["heartbeat_at", "claimed_by", "attempts", "enqueued_at"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created and revoked on the lead's tokens page; the admin only lists them."""

    list_display = ["name", "prefix", "user", "scope", "created_at", "revoked_at"]
    readonly_fields = ["key_hash", "prefix"]
