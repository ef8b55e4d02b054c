"""Raw generations and the candidate pairs built from them, with every filter decision.

A project's generations file becomes ``RawPrompt`` rows (question, image, split, source,
reference answer, judge verdicts supplied in the file) and their ``RawResponse`` rows (model,
sample index, text, correctness flag supplied in the file). A curation run replaces the
project's ``CandidatePair`` rows and their ``PairDecision`` rows; ``CurationRun`` keeps what
each run was asked and found. Promotion turns kept pairs into annotation Samples.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import PairType, Project, Split


class RawPrompt(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="raw_prompts")
    prompt_id = models.CharField(max_length=200)
    split = models.CharField(max_length=20, choices=Split.choices)
    source = models.CharField(max_length=120, blank=True, help_text="Source dataset.")
    question = models.TextField()
    reference_answer = models.TextField(blank=True)
    image = models.FileField(max_length=300)
    image_sha256 = models.CharField(max_length=64)
    # Judge verdicts from the file: [{"a": [model, sample], "b": [model, sample], "judges": [...]}]
    verdicts = models.JSONField(default=list, blank=True)
    content_hash = models.CharField(max_length=64)
    line = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["prompt_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "prompt_id"], name="rawprompt_unique_id")
        ]

    def __str__(self) -> str:
        return self.prompt_id


class RawResponse(models.Model):
    prompt = models.ForeignKey(RawPrompt, on_delete=models.CASCADE, related_name="responses")
    model = models.CharField(max_length=200)
    sample_index = models.PositiveIntegerField(default=0)
    text = models.TextField()
    correct = models.BooleanField(null=True, blank=True, help_text="Supplied in the file.")

    class Meta:
        ordering = ["prompt_id", "model", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["prompt", "model", "sample_index"], name="rawresponse_unique_sample"
            )
        ]

    def __str__(self) -> str:
        return f"{self.model}#{self.sample_index}"


class CurationRun(models.Model):
    """One pairing-and-filtering run: its options and its funnel."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="curation_runs")
    params = models.JSONField(default=dict)
    funnel = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]


class CandidatePair(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="candidate_pairs")
    prompt = models.ForeignKey(RawPrompt, on_delete=models.CASCADE, related_name="pairs")
    response_a = models.ForeignKey(RawResponse, on_delete=models.CASCADE, related_name="+")
    response_b = models.ForeignKey(RawResponse, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=PairType.choices)
    how = models.JSONField(default=dict, help_text="How the pair was made.")
    position = models.PositiveIntegerField()
    removed_by = models.CharField(max_length=20, blank=True, help_text="Empty: kept.")
    external_id = models.CharField(max_length=200, help_text="The sample id on promotion.")

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "response_a", "response_b"], name="candidatepair_unique"
            ),
            models.UniqueConstraint(fields=["project", "position"], name="candidatepair_position"),
        ]
        indexes = [models.Index(fields=["project", "removed_by"], name="candidatepair_removed")]


class PairDecision(models.Model):
    """One filter's verdict on one pair it looked at."""

    pair = models.ForeignKey(CandidatePair, on_delete=models.CASCADE, related_name="decisions")
    filter = models.CharField(max_length=20)
    order = models.PositiveSmallIntegerField()
    passed = models.BooleanField()
    reason = models.CharField(max_length=400)
    figures = models.JSONField(default=dict)

    class Meta:
        ordering = ["pair_id", "order"]
        constraints = [
            models.UniqueConstraint(fields=["pair", "filter"], name="pairdecision_unique")
        ]
