"""The judge runner's configs and stored calls in the admin site."""

from django.contrib import admin

from .models import JudgeCall, JudgeConfig
from .runner.run import shown_output


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = ("name", "model", "base_url", "orders", "runs", "concurrency", "api_key_env")
    search_fields = ("name", "model", "base_url")
    raw_id_fields = ("created_by",)


@admin.register(JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
    """Stored calls are the cache: read here, never edited."""

    list_display = ("key", "model", "order", "run_index", "parse_method", "verdict", "latency_ms")
    list_filter = ("parse_method", "kind", "order")
    search_fields = ("key", "model")
    exclude = ("raw_output",)
    readonly_fields = ("output",)

    @admin.display(description="Raw output (stored whole, shown shortened)")
    def output(self, call: JudgeCall) -> str:
        return shown_output(call.raw_output)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
