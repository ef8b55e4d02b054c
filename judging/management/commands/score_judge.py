"""Score judges' predictions on a dataset and print the paper's tables (one file per judge)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.text import counted
from judging.datasets import resolve_dataset
from judging.errors import InputFileError, PredictionsFileRejected
from judging.metrics import SPLIT_ORDER
from judging.models import JudgeConfig
from judging.paired import N_BOOT
from judging.predictions import DatasetIndex, read_predictions
from judging.report import (
    FORMATS,
    MISSING_POLICIES,
    JudgeInput,
    compare_judges,
    judge_name,
    render,
    render_compare,
    score_judges,
)
from judging.runner.fallback import verifier_fallback
from judging.runner.run import RunnerError

_LISTED = 10


class Command(BaseCommand):
    # Scoring reads files and dataset rows only; it need not wait for the URL and admin checks.
    requires_system_checks: list[str] = []
    help = (
        "Score judges on a dataset: DATASET is a file in the published Multi-Crit row format "
        "(JSONL or Parquet; several shards comma-separated), PROJECT:vN or a dataset version id; "
        "one PREDICTIONS file per judge (prediction, output or critic field, or an lmms-eval "
        "multi_crit samples log)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset")
        parser.add_argument("predictions", nargs="+")
        parser.add_argument("--format", choices=FORMATS, default="table")
        parser.add_argument(
            "--lenient",
            action="store_true",
            help="Skip unknown ids, duplicates and rows of another split with a warning, keeping "
            "what the published evaluation keeps: a repeated question id keeps its first line "
            "(dataset and predictions); a dataset row repeating the prompt and criterion of an "
            "earlier row under another question id replaces it (the last is kept). Repeats are "
            "counted within a split.",
        )
        parser.add_argument("--split", choices=SPLIT_ORDER, help="Score one split only.")
        parser.add_argument(
            "--tie-margin",
            type=float,
            default=0.0,
            help="For files of scores (score_a + score_b, or response + score): "
            "|score_a - score_b| <= this is a tie, which counts as wrong (default 0).",
        )
        parser.add_argument(
            "--n-boot",
            type=int,
            default=None,
            help=f"Bootstrap replicates (default 1000; {N_BOOT} with --compare, as the compare "
            "page and the API).",
        )
        parser.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")
        parser.add_argument(
            "--runs", action="store_true", help="Also show a row per run in the tables."
        )
        parser.add_argument(
            "--missing",
            choices=MISSING_POLICIES,
            default="wrong",
            help="Dataset rows without a prediction: count as wrong (default, as the published "
            "evaluation does) or skip them (a partial run; the skipped rows are named).",
        )
        parser.add_argument(
            "--verifier",
            metavar="CONFIG",
            help="A saved judge config that reads the last four lines of each output the parser "
            "cannot read and answers in one word, as the published evaluation's fallback does; "
            "the rows it decides are listed.",
        )
        parser.add_argument(
            "--compare",
            action="store_true",
            help="Exactly two PREDICTIONS files: compare judge A (the first) with judge B on the "
            "same rows: exact McNemar per criterion, paired bootstrap differences of PAcc, CMR, "
            "TOS, Avg and Overall, Holm-corrected (alpha 0.05).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["n_boot"] is None:
            options["n_boot"] = N_BOOT if options["compare"] else 1000
        if options["n_boot"] < 0:
            raise CommandError("--n-boot must be 0 or more")
        if options["compare"] and len(options["predictions"]) != 2:
            raise CommandError("--compare takes exactly two predictions files (judge A, judge B)")
        if options["compare"] and options["missing"] != "wrong":
            raise CommandError("--compare counts missing predictions as wrong: drop --missing skip")
        try:
            skipped: list[str] | None = [] if options["lenient"] else None
            rows, label = resolve_dataset(options["dataset"], skipped=skipped)
        except InputFileError as exc:
            raise CommandError(f"{options['dataset']}: {exc}") from None
        if skipped:
            self.stderr.write(
                f"{label}: warning: {counted(len(skipped), 'repeated dataset row')} left out "
                f"(a repeated question id keeps its first row, a repeated prompt and criterion "
                f"its last; first: {skipped[0]})"
            )
        for warning in rows.warnings:
            self.stderr.write(f"{label}: warning: {warning}")
        if options["split"] and options["split"] not in rows.splits:
            raise CommandError(f"{label} has no rows of split {options['split']!r}")
        index = DatasetIndex(rows)
        verifier = self._verifier(options["verifier"])
        judges: list[JudgeInput] = []
        for path in options["predictions"]:
            try:
                parsed = read_predictions(
                    path,
                    dataset_index=index,
                    lenient=options["lenient"],
                    split=options["split"],
                    tie_margin=options["tie_margin"],
                )
            except PredictionsFileRejected as exc:
                if exc.count == 1:
                    raise CommandError(f"{path}: {exc}") from None
                for problem in exc.problems:
                    self.stderr.write(f"{path}: {problem}")
                if exc.more:
                    self.stderr.write(f"... and {exc.more:,} more")
                raise CommandError(
                    f"{path}: {counted(exc.count, 'error')}; nothing was scored."
                ) from None
            except InputFileError as exc:
                raise CommandError(f"{path}: {exc}") from None
            name = judge_name(path, parsed)
            if any(j.name == name for j in judges):
                raise CommandError(f"{path}: judge {name!r} is given twice (one file per judge)")
            if verifier is not None:
                self._verify(name, parsed, index, verifier)
            judges.append(JudgeInput(name=name, source=path, parsed=parsed))
            self._report_parse(name, parsed)
            missing = sum(parsed.missing.values())
            if missing and options["missing"] == "wrong":
                self.stderr.write(
                    f"{name}: {missing} dataset rows have no prediction and count as wrong "
                    "(--missing skip leaves them out)"
                )
        if options["compare"]:
            payload = compare_judges(
                rows,
                *judges,
                dataset=label,
                split=options["split"],
                n_boot=options["n_boot"],
                seed=options["seed"],
            )
            self.stdout.write(render_compare(payload, options["format"]), ending="")
            return
        payload = score_judges(
            rows,
            judges,
            dataset=label,
            split=options["split"],
            n_boot=options["n_boot"],
            seed=options["seed"],
            missing=options["missing"],
        )
        self.stdout.write(render(payload, options["format"], runs=options["runs"]), ending="")

    def _verifier(self, name: str | None) -> JudgeConfig | None:
        if not name:
            return None
        config = JudgeConfig.objects.filter(name=name).first()
        if config is None:
            raise CommandError(f"--verifier: no judge config named {name!r}")
        return config

    def _verify(self, name: str, parsed: Any, index: DatasetIndex, verifier: JudgeConfig) -> None:
        """The verifier fallback on ``parsed``'s unparsed outputs, each decided row listed."""
        try:
            asked = verifier_fallback(parsed, question_ids=index.question_id, config=verifier)
        except RunnerError as exc:
            raise CommandError(f"--verifier {verifier.name}: {exc}") from None
        if not asked:
            return
        decided = [v for v in asked if v.verdict]
        self.stderr.write(
            f"{name}: the verifier {verifier.name} decided {len(decided)} of "
            f"{counted(len(asked), 'unparsed output')}:"
        )
        for item in asked[:_LISTED]:
            outcome = item.verdict or f"undecided ({item.error or repr(item.answer[:40])})"
            self.stderr.write(f"  run {item.run}, {item.question_id}: {outcome}")
        if len(asked) > _LISTED:
            self.stderr.write(f"  ... and {len(asked) - _LISTED} more")

    def _report_parse(self, name: str, parsed: Any) -> None:
        for warning in parsed.warnings:
            self.stderr.write(f"{name}: warning: {warning}")
        if parsed.unparsable:
            self.stderr.write(
                f"{name}: {counted(len(parsed.unparsable), 'prediction')} could not be read "
                "(scored as invalid):"
            )
            for item in parsed.unparsable[:_LISTED]:
                text = item.text.replace("\n", " ")[-80:]
                self.stderr.write(
                    f"  line {item.line} ({item.question_id}, run {item.run}): {text!r}"
                )
            if len(parsed.unparsable) > _LISTED:
                self.stderr.write(f"  ... and {len(parsed.unparsable) - _LISTED} more")
        sys.stderr.flush()
