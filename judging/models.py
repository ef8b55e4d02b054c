"""Judge runs on a dataset version, their row predictions and the stored scorecards."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from aggregation.models import DatasetVersion
from annotation.models import Split
from core.models import Job

from .runner.dialects import DEFAULT_DIALECT, dialect_choices
from .validators import (
    validate_api_key_env,
    validate_base_url,
    validate_json_object,
    validate_replica_urls,
)


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
    prediction = models.CharField(
        max_length=20, help_text="model_a, model_b, invalid, or tie (a scalar judge's scores)."
    )
    raw_output = models.TextField(blank=True)
    score_a = models.FloatField(null=True, blank=True, help_text="A scalar judge's score of A.")
    score_b = models.FloatField(null=True, blank=True, help_text="A scalar judge's score of B.")
    call_keys = models.JSONField(
        null=True,
        blank=True,
        help_text="The judge runner's calls behind this prediction (JudgeCall keys, A/B first); "
        "null for an upload.",
    )

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


class JudgeConfig(models.Model):
    """How to call one judge model through an OpenAI-compatible chat completions server.

    The API key is never stored: ``api_key_env`` names the environment variable holding it.
    """

    class Orders(models.TextChoices):
        AB = "ab", "A then B only"
        BOTH = "both", "Both orders (A/B and B/A)"

    class ReasoningEffort(models.TextChoices):
        DEFAULT = "", "The model's default"
        MINIMAL = "minimal", "Minimal"
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"

    name = models.CharField(max_length=100, unique=True)
    base_url = models.URLField(
        max_length=300,
        validators=[validate_base_url],
        help_text="The server's OpenAI API root, e.g. http://127.0.0.1:8000/v1 (for Azure, the "
        "resource's endpoint, e.g. https://NAME.openai.azure.com).",
    )
    replica_urls = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_replica_urls],
        help_text="Further servers of the same model; each call goes to the one with the fewest "
        "calls in flight.",
    )
    api_style = models.CharField(
        max_length=20,
        choices=dialect_choices(),
        default=DEFAULT_DIALECT,
        help_text="How the provider reads a request; a refused parameter is adapted to anyway.",
    )
    api_version = models.CharField(
        max_length=40,
        blank=True,
        validators=[RegexValidator(r"^[A-Za-z0-9._-]*$", "Letters, digits, dots and dashes.")],
        help_text="Azure OpenAI's api-version (e.g. 2024-10-21) for a deployment path; empty "
        "for the v1 path.",
    )
    model = models.CharField(max_length=200)
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[validate_api_key_env],
        help_text="Name of the environment variable holding the API key (the key is never "
        "stored); empty for a server without a key.",
    )
    temperature = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)]
    )
    top_p = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    max_tokens = models.PositiveIntegerField(
        default=1024, validators=[MinValueValidator(1), MaxValueValidator(200_000)]
    )
    retry_max_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=8192,
        validators=[MinValueValidator(1), MaxValueValidator(200_000)],
        help_text="An answer cut at the budget before its verdict is asked once more with this "
        "budget; empty for no retry.",
    )
    reasoning_effort = models.CharField(
        max_length=10, choices=ReasoningEffort.choices, default="", blank=True
    )
    chat_template_kwargs = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_json_object],
        help_text='vLLM / SGLang chat template options, e.g. {"enable_thinking": true}.',
    )
    extra_body = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_json_object],
        help_text="Further request fields sent as they are (a JSON object).",
    )
    seed = models.IntegerField(null=True, blank=True)
    runs = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(15)],
        help_text="Runs combined by majority vote.",
    )
    orders = models.CharField(max_length=4, choices=Orders.choices, default=Orders.AB)
    concurrency = models.PositiveSmallIntegerField(
        default=8,
        validators=[MinValueValidator(1), MaxValueValidator(256)],
        help_text="Requests in flight at once.",
    )
    rpm = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Requests per minute; empty for no limit.",
    )
    timeout_seconds = models.FloatField(
        default=120.0, validators=[MinValueValidator(0.1), MaxValueValidator(3600.0)]
    )
    retries = models.PositiveSmallIntegerField(
        default=4,
        validators=[MaxValueValidator(10)],
        help_text="Further tries after a 429, a 5xx, a timeout or a connection error.",
    )
    image_max_side = models.PositiveIntegerField(
        default=1536,
        validators=[MinValueValidator(64), MaxValueValidator(8192)],
        help_text="Images are downscaled so their longest side is at most this.",
    )
    budget_tokens = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Stop the run once its calls used this many tokens.",
    )
    price_input_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True
    )
    price_output_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True
    )
    currency = models.CharField(max_length=8, default="USD")
    template_name = models.CharField(max_length=200, blank=True)
    template_text = models.TextField(
        blank=True, help_text="The prompt template's text; empty for the default template."
    )
    verifier = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Another judge asked to read the verdict of an output the parser cannot read.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def urls(self) -> list[str]:
        """The base URL and every replica."""
        return [self.base_url, *(self.replica_urls or [])]

    def clean(self) -> None:
        """The template's placeholders are known ones; a config is not its own verifier."""
        from .prompt import TemplateFileError, template_from_text

        if self.template_text.strip():
            try:
                template_from_text(self.template_text, name=self.template_name or "template")
            except TemplateFileError as exc:
                raise ValidationError({"template_text": str(exc)}) from None
        if self.verifier_id is not None and self.pk is not None and self.verifier_id == self.pk:
            raise ValidationError({"verifier": "A judge cannot verify its own outputs."})


class JudgeCall(models.Model):
    """One answered (or failed) chat completion request of the judge runner: the exact cache.

    ``key`` is the SHA-256 of every part of the request that can change its answer
    (``judging.runner.cache.call_key``), so a stored call is reused only for the same request.
    A failed call (``error``) is asked again on the next run.
    """

    class Kind(models.TextChoices):
        CRITERION = "criterion", "One criterion"
        HOLISTIC = "holistic", "Holistic"

    class ParseMethod(models.TextChoices):
        DIRECT = "direct", "Parsed directly"
        VERIFIER = "verifier", "Read by the verifier"
        UNPARSED = "unparsed", "Unparsed"
        TRUNCATED = "truncated", "Cut at the token budget"
        FAILED = "failed", "Request failed"

    key = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CRITERION)
    base_url = models.CharField(max_length=300, help_text="The server that answered.")
    model = models.CharField(max_length=200)
    order = models.CharField(max_length=2, default="ab")
    run_index = models.PositiveSmallIntegerField(default=1)
    image_sha256 = models.CharField(max_length=64, blank=True)
    raw_output = models.TextField(blank=True)
    reasoning_output = models.TextField(
        blank=True, help_text="The model's thinking (reasoning fields and <think> blocks)."
    )
    reasoning_tokens = models.PositiveIntegerField(default=0)
    verdict = models.CharField(
        max_length=10, blank=True, help_text="model_a / model_b (mapped back from the order)."
    )
    parse_method = models.CharField(max_length=10, choices=ParseMethod.choices)
    verifier_output = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    finish_reason = models.CharField(max_length=40, blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["model", "base_url"], name="judgecall_model")]

    def __str__(self) -> str:
        return f"{self.model} {self.order} run {self.run_index} ({self.parse_method})"
