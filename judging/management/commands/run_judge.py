"""Run a judge over a dataset version through an OpenAI-compatible API and print its scorecard."""

from __future__ import annotations

import argparse
import io
import json
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from aggregation.models import DatasetVersion
from annotation.models import Project
from judging.datasets import rows_from_version
from judging.metrics import SPLIT_ORDER
from judging.models import JudgeConfig, JudgeRun
from judging.predictions import DatasetIndex, read_predictions
from judging.prompt import TemplateFileError, load_template
from judging.report import FORMATS, JudgeInput, render, score_judges
from judging.runner.dialects import DIALECTS
from judging.runner.estimate import Estimate
from judging.runner.figures import runner_lines
from judging.runner.presets import PRESETS, VERIFIER_NEEDED
from judging.runner.run import RunnerError, judge_run_execute

#: Command-line flag -> JudgeConfig field.
FLAGS = {
    "model": "--model",
    "api_style": "--api-style",
    "api_version": "--api-version",
    "reasoning_effort": "--reasoning-effort",
    "chat_template_kwargs": "--chat-template-kwargs",
    "extra_body": "--extra-body",
    "retry_max_tokens": "--retry-max-tokens",
    "api_key_env": "--api-key-env",
    "runs": "--runs",
    "orders": "--orders",
    "concurrency": "--concurrency",
    "rpm": "--rpm",
    "budget_tokens": "--budget-tokens",
    "temperature": "--temperature",
    "top_p": "--top-p",
    "max_tokens": "--max-tokens",
    "seed": "--seed",
    "timeout_seconds": "--timeout",
    "retries": "--retries",
    "image_max_side": "--image-max-side",
    "price_input_per_million": "--price-input",
    "price_output_per_million": "--price-output",
    "template_text": "--template",
}
_BAR = 24


def _json_object(text: str) -> dict[str, Any]:
    """A JSON object given on the command line (argparse reports the error with the flag)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("give a JSON object, e.g. '{\"key\": 1}'")
    return value


class Command(BaseCommand):
    help = (
        "Run a judge over every row of a dataset version (one call per row, run and order), "
        "store and score it like an upload, and print its scorecard as score_judge does. "
        "Answers are cached: running it again asks only what is missing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="The project's slug.")
        parser.add_argument("version", help="The version number (3 or v3).")
        parser.add_argument("--config", help="A saved judge config; the flags below override it.")
        parser.add_argument("--name", help="The judge's name on the leaderboard.")
        parser.add_argument(
            "--base-url",
            action="append",
            help="The server's API root, e.g. http://host:8000/v1; give it several times for "
            "replicas of one model (each call goes to the one with the fewest calls in flight).",
        )
        parser.add_argument("--model")
        parser.add_argument(
            "--api-style",
            choices=list(DIALECTS),
            help="How the provider reads a request: "
            + "; ".join(f"{d.key}: {d.label}" for d in DIALECTS.values())
            + ". A parameter the server refuses is adapted to anyway.",
        )
        parser.add_argument("--api-version", help="Azure OpenAI's api-version (deployment path).")
        parser.add_argument(
            "--reasoning-effort", choices=[c for c in JudgeConfig.ReasoningEffort.values if c]
        )
        parser.add_argument(
            "--chat-template-kwargs",
            type=_json_object,
            help="vLLM / SGLang chat template options as JSON, e.g. '{\"enable_thinking\": true}'.",
        )
        parser.add_argument(
            "--extra-body", type=_json_object, help="Further request fields as a JSON object."
        )
        parser.add_argument(
            "--retry-max-tokens",
            type=int,
            help="Ask an answer cut at the budget before its verdict once more with this budget.",
        )
        parser.add_argument(
            "--preset",
            choices=list(PRESETS),
            help="Named settings: "
            + "; ".join(f"{p.key}: {p.describe()}" for p in PRESETS.values())
            + " (flags given beside it win).",
        )
        parser.add_argument(
            "--verifier",
            help="A saved judge config that reads the verdict of an output the parser cannot "
            "read (its last four lines).",
        )
        parser.add_argument("--api-key-env", help="Name of the variable holding the API key.")
        parser.add_argument("--runs", type=int)
        parser.add_argument("--orders", choices=JudgeConfig.Orders.values)
        parser.add_argument("--concurrency", type=int)
        parser.add_argument("--rpm", type=int, help="Requests per minute.")
        parser.add_argument("--template", help="A prompt template file (default: ours).")
        parser.add_argument("--budget-tokens", type=int)
        parser.add_argument("--temperature", type=float)
        parser.add_argument("--top-p", type=float)
        parser.add_argument("--max-tokens", type=int)
        parser.add_argument("--seed", type=int)
        parser.add_argument("--timeout", type=float, help="Seconds per request.")
        parser.add_argument("--retries", type=int)
        parser.add_argument("--image-max-side", type=int)
        parser.add_argument("--price-input", type=Decimal, help="Price per million input tokens.")
        parser.add_argument("--price-output", type=Decimal, help="Price per million output tokens.")
        parser.add_argument("--format", choices=FORMATS, default="table")
        parser.add_argument("--n-boot", type=int, default=1000, help="Bootstrap replicates.")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        version = self._version(options["project"], options["version"])
        config = self._config(options)
        self._progress_shown = not options["no_progress"]
        try:
            result = judge_run_execute(
                version=version,
                config=config,
                judge=options["name"] or "",
                progress=self._progress,
                on_estimate=self._estimate,
            )
        except RunnerError as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            self.stderr.write("\nInterrupted: the answers so far are stored; run again to resume.")
            raise CommandError("interrupted") from None
        if self._progress_shown:
            self.stderr.write("")
        self.stderr.write(result.summary())
        for failure in result.failures:
            self.stderr.write(
                f"  failed: {failure['question_id']} run {failure['run']} order "
                f"{failure['order'].upper()}: {failure['error']}"
            )
        self.stdout.write(self._scorecard(version, result, options), ending="")

    def _version(self, slug: str, number: str) -> DatasetVersion:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"no project {slug!r}")
        text = number.strip().lower().removeprefix("v")
        if not text.isdigit():
            raise CommandError(f"{number!r} is not a version number (3 or v3)")
        version = DatasetVersion.objects.filter(project=project, number=int(text)).first()
        if version is None:
            raise CommandError(f"{slug} has no version {text}")
        return version

    def _config(self, options: dict[str, Any]) -> JudgeConfig:
        if options["config"]:
            config = JudgeConfig.objects.filter(name=options["config"]).first()
            if config is None:
                raise CommandError(f"no judge config named {options['config']!r}")
            config.pk = None  # flags change this run only, never the saved config
        else:
            if not options["base_url"] or not options["model"]:
                raise CommandError("give --base-url and --model, or --config NAME")
            config = JudgeConfig(name=options["name"] or options["model"])
        self._preset_and_verifier(config, options)
        if options["base_url"]:
            config.base_url, *config.replica_urls = options["base_url"]
        for field, flag in FLAGS.items():
            value = options.get(flag.removeprefix("--").replace("-", "_"))
            if value is None:
                continue
            if field == "template_text":
                try:
                    template = load_template(value)
                except TemplateFileError as exc:
                    raise CommandError(f"--template: {exc}") from None
                config.template_text, config.template_name = template.text, template.name
                continue
            setattr(config, field, value)
        try:
            config.full_clean(exclude=["name", "verifier", "created_by"], validate_unique=False)
        except ValidationError as exc:
            shown = {**FLAGS, "base_url": "--base-url", "replica_urls": "--base-url"}
            problems = [
                f"{shown.get(field, field)}: {' '.join(messages)}"
                for field, messages in exc.message_dict.items()
            ]
            raise CommandError("; ".join(problems)) from None
        return config

    def _preset_and_verifier(self, config: JudgeConfig, options: dict[str, Any]) -> None:
        """Apply ``--preset`` (before the flags, which win) and ``--verifier``."""
        if options["verifier"]:
            verifier = JudgeConfig.objects.filter(name=options["verifier"]).first()
            if verifier is None:
                raise CommandError(f"--verifier: no judge config named {options['verifier']!r}")
            config.verifier = verifier
        preset = PRESETS.get(options["preset"] or "")
        if preset is None:
            return
        preset.apply(config)
        if preset.needs_verifier and config.verifier is None:
            raise CommandError(
                "--preset " + VERIFIER_NEEDED.format(preset=preset.key) + " with --verifier NAME"
            )

    def _estimate(self, estimate: Estimate) -> None:
        self.stderr.write(f"Estimate: {estimate.text()}.")

    def _progress(self, done: int, total: int | None = None, message: str | None = None) -> None:
        if not self._progress_shown or not total or not message or message.startswith("Estimate"):
            return
        filled = int(_BAR * done / total)
        bar = "#" * filled + "." * (_BAR - filled)
        self.stderr.write(f"\r[{bar}] {done:,}/{total:,} calls · {message}\x1b[K", ending="")
        self.stderr.flush()

    def _scorecard(self, version: DatasetVersion, result: Any, options: dict[str, Any]) -> str:
        """The run's scorecard as score_judge prints it, then the runner's figures."""
        rows = rows_from_version(version)
        lines = [
            json.dumps({"question_id": q, "prediction": p, "run": run.run_index})
            for run in JudgeRun.objects.filter(pk__in=[r.pk for r in result.runs])
            for q, p in run.predictions.values_list("question_id", "prediction")
        ]
        handle = io.BytesIO(("\n".join(lines) + "\n").encode())
        handle.name = "runner.jsonl"
        parsed = read_predictions(handle, dataset_index=DatasetIndex(rows))
        payload = score_judges(
            rows,
            [JudgeInput(name=result.judge, source="judge runner", parsed=parsed)],
            dataset=f"{version.project.slug}:v{version.number}",
            n_boot=options["n_boot"],
        )
        figures = result.runs[0].stats.get("runner", {})
        currency = result.runs[0].stats.get("config", {}).get("currency", "")
        if options["format"] == "json":
            payload["judges"][result.judge]["runner"] = figures
            payload["judges"][result.judge]["partial"] = result.partial
            return render(payload, "json")
        text = render(payload, options["format"])
        bullet = "- " if options["format"] == "markdown" else "  "
        extra = []
        for split in (s for s in SPLIT_ORDER if s in figures):
            extra.append(f"{result.judge} runner, {split}:")
            extra += [bullet + line for line in runner_lines(figures[split], currency=currency)]
        if result.partial:
            extra.append(
                f"{result.judge}: partial run; {result.stop_reason or 'some calls failed'}"
            )
        return text + "\n" + "\n".join(extra) + "\n"
