"""Judge runs on a dataset version, their row predictions and the stored scorecards."""

from django.conf import settings
from django.db import models

from aggregation.models import DatasetVersion
from annotation.models import Split
from core.models import Job


class JudgeRun(models.Model):
    """One run of one judge over a dataset version (several runs combine by majority vote)."""

    class Source(models.TextChoices):
        UPLOAD = "upload", "Uploaded predictions"
        API = "api", "Submitted through the API"
        RUNNER = "runner", "Judge runner"

    version = models.ForeignKey(DatasetVersion, on_delete=models.PROTECT, related_name="judge_runs")
    judge = models.CharField(max_length=200)
    run_index = models.PositiveSmallIntegerField(default=1)
    template_hash = models.CharField(max_length=64, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.UPLOAD)
    stats = models.JSONField(default=dict, help_text="Parse counts: rows, invalid, unparsable ids.")
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version", "judge", "run_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "judge", "run_index"], name="judgerun_unique_index"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge} run {self.run_index} on {self.version}"


class Prediction(models.Model):
    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="predictions")
    question_id = models.CharField(max_length=300)
    prediction = models.CharField(max_length=20, help_text="model_a, model_b, or invalid.")
    raw_output = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "question_id"], name="prediction_unique_row"),
        ]


class Scorecard(models.Model):
    """The stored figures of a judge (all its runs voted) on one split of a dataset version."""

    version = models.ForeignKey(DatasetVersion, on_delete=models.PROTECT, related_name="scorecards")
    judge = models.CharField(max_length=200)
    split = models.CharField(max_length=20, choices=Split.choices)
    runs = models.PositiveSmallIntegerField(default=1)
    template_hash = models.CharField(max_length=64, blank=True)
    figures = models.JSONField(default=dict, help_text="Every metric, count and CI.")
    pacc = models.FloatField(null=True)
    cmr = models.FloatField(null=True)
    tos = models.FloatField(null=True)
    avg = models.FloatField(null=True)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["version", "split", "-pacc"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "judge", "split"], name="scorecard_unique_judge_split"
            ),
        ]
