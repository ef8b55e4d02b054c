from django.contrib import admin

from . import models


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "annotators_per_sample", "tie_cap", "work_order"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(models.Criterion)
class CriterionAdmin(admin.ModelAdmin):
    list_display = ["project", "split", "key", "name", "order"]
    list_filter = ["project", "split"]


@admin.register(models.Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = ["external_id", "project", "split", "is_seed", "status"]
    list_filter = ["project", "split", "is_seed", "status"]
    search_fields = ["external_id", "question"]


admin.site.register(models.ProjectMember)
