"""The history of a project's criteria: every addition, removal, edit and reordering."""

from django.conf import settings
from django.db import models

from .choices import Split
from .project import Criterion, Project


class CriterionChange(models.Model):
    """One change to the criteria, with who made it, when, and how many votes existed. Append-only.

    ``details`` holds what changed: ``{"before": {...}, "after": {...}}`` for edits, the keys in
    their new order for a reordering.
    """

    class Action(models.TextChoices):
        ADDED = "added", "Added"
        REMOVED = "removed", "Removed"
        RESTORED = "restored", "Restored"
        EDITED = "edited", "Edited"
        REORDERED = "reordered", "Reordered"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="changes")
    split = models.CharField(max_length=20, choices=Split.choices)
    key = models.SlugField(max_length=60)
    action = models.CharField(max_length=20, choices=Action.choices)
    details = models.JSONField(default=dict, blank=True)
    votes = models.PositiveIntegerField(
        default=0, help_text="Formal votes on the criterion (or its split) when it changed."
    )
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "at", "id"]
        indexes = [models.Index(fields=["project", "at"], name="criterion_change_project_at")]

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.split}/{self.key}"
