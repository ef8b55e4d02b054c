"""Prediction-powered evaluation of a judge: a few human labels plus a reference on the pool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.text import counted
from judging.datasets import resolve_dataset
from judging.errors import InputFileError
from judging.metrics import SPLIT_ORDER, ScoreInput, encode_predictions, majority_vote_codes
from judging.ppi import LEVEL, split_figures
from judging.predictions import DatasetIndex, ParsedPredictions, read_predictions
from judging.report import format_json, judge_name

FORMATS = ("table", "json")
_HEADER = ("Target", "PPI", "PPI CI", "lambda", "eff. n", "labeled", "Human", "Human CI", "All")


def voted_codes(parsed: ParsedPredictions) -> np.ndarray:
    """A file's verdict codes per dataset row, several runs combined by majority vote."""
    runs = [encode_predictions(run) for run in parsed.run_list()]
    return runs[0] if len(runs) == 1 else majority_vote_codes(np.stack(runs))


def labeled_from_ids(rows: ScoreInput, ids: list[str]) -> np.ndarray:
    """Rows named by question id, or all rows of a named prompt id; an unknown id is refused."""
    wanted = np.array(ids, dtype=str)
    known = np.isin(wanted, rows.question_id) | np.isin(wanted, rows.prompt_id)
    if not known.all():
        raise CommandError(f"--labeled: {str(wanted[~known][0])!r} is no question id or prompt id")
    return np.isin(rows.question_id, wanted) | np.isin(rows.prompt_id, wanted)


def labeled_from_share(rows: ScoreInput, share: float, seed: int) -> np.ndarray:
    """A random ``share`` of the prompts (of each split), drawn by ``seed``: all their rows."""
    unit = np.char.add(np.char.add(rows.split, "\x1f"), rows.prompt_id)
    units, inverse = np.unique(unit, return_inverse=True)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(units), size=round(share * len(units)), replace=False)
    picked = np.zeros(len(units), dtype=bool)
    picked[chosen] = True
    return picked[inverse]


def _cell(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _interval(ci: list | None) -> str:
    return "n/a" if not ci else f"{_cell(ci[0])}-{_cell(ci[1])}"


def _line(label: str, fig: dict[str, Any]) -> list[str]:
    human = fig["human_only"]
    return [
        label,
        _cell(fig["estimate"]),
        _interval(fig["ci"]),
        _cell(fig["lambda"], 3),
        _cell(fig["effective_n"], 1),
        f"{fig['labeled']:,}/{fig['pool']:,}",
        _cell(human["estimate"]),
        _interval(human["ci"]),
        _cell(fig.get("full")),
    ]


def format_ppi_table(payload: dict[str, Any]) -> str:
    """One aligned table per split: a row per criterion and PAcc."""
    blocks = []
    for split, figures in payload["splits"].items():
        body = [_line(c, f) for c, f in figures["per_criterion"].items()]
        body.append(_line("PAcc", figures["pacc"]))
        widths = [max(len(r[i]) for r in [list(_HEADER), *body]) for i in range(len(_HEADER))]
        lines = [
            "  ".join(
                [cells[0].ljust(widths[0])]
                + [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
            ).rstrip()
            for cells in [list(_HEADER), *body]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        title = (
            f"{split}: {payload['judge']} against the human labels of "
            f"{counted(figures['labeled'], 'row')} of {figures['pool']:,}, "
            f"reference {figures['reference']} on every row "
            f"({round(100 * figures['level'])}% intervals)"
        )
        blocks.append("\n".join([title, *lines]))
    note = (
        "PPI: prediction-powered (PPI++) estimate; eff. n: the human labels a human-only "
        "interval would need to be as narrow; labeled: labeled/pool (rows; prompts for PAcc); "
        "All: the figure on every human label, for checking."
    )
    return "\n\n".join(blocks) + "\n\n" + note + "\n"


class Command(BaseCommand):
    requires_system_checks: list[str] = []
    help = (
        "Estimate a judge's per-criterion accuracy and PAcc from a labeled subset of the "
        "dataset's rows and a reference's predictions on every row (prediction-powered "
        "inference, PPI++), next to the human-only estimate of the same subset."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", help="Row file(s), PROJECT:vN or a dataset version id.")
        parser.add_argument("predictions", help="The judge's predictions file.")
        parser.add_argument(
            "--reference", required=True, help="The reference's predictions (panel or judge)."
        )
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument(
            "--labeled",
            metavar="IDS_FILE",
            help="A file of question ids or prompt ids (one a line): the rows with human labels.",
        )
        which.add_argument(
            "--labeled-share",
            type=float,
            help="Treat a random share (0-1) of the prompts as labeled, drawn by --seed.",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--split", choices=SPLIT_ORDER)
        parser.add_argument("--level", type=float, default=LEVEL, help="Interval level.")
        parser.add_argument("--format", choices=FORMATS, default="table")

    def handle(self, *args: Any, **options: Any) -> None:
        if not 0.0 < options["level"] < 1.0:
            raise CommandError("--level is between 0 and 1")
        try:
            rows, label = resolve_dataset(options["dataset"])
        except InputFileError as exc:
            raise CommandError(f"{options['dataset']}: {exc}") from None
        index = DatasetIndex(rows)
        judge, judge_codes = self._read(options["predictions"], index)
        reference, reference_codes = self._read(options["reference"], index)
        labeled = self._labeled(rows, options)
        splits = [options["split"]] if options["split"] else rows.splits
        if options["split"] and options["split"] not in rows.splits:
            raise CommandError(f"{label} has no rows of split {options['split']!r}")
        payload = {
            "dataset": label,
            "judge": judge,
            "labeled_from": options["labeled"] or f"share {options['labeled_share']}",
            "seed": options["seed"],
            "splits": {
                split: split_figures(
                    rows,
                    split,
                    judge_codes,
                    reference_codes,
                    labeled,
                    reference_name=reference,
                    level=options["level"],
                    with_full=True,
                )
                for split in splits
            },
        }
        text = format_json(payload) if options["format"] == "json" else format_ppi_table(payload)
        self.stdout.write(text, ending="")

    def _read(self, path: str, index: DatasetIndex) -> tuple[str, np.ndarray]:
        try:
            parsed = read_predictions(path, dataset_index=index)
        except InputFileError as exc:
            raise CommandError(f"{path}: {exc}") from None
        for warning in parsed.warnings:
            self.stderr.write(f"{path}: warning: {warning}")
        return judge_name(path, parsed), voted_codes(parsed)

    def _labeled(self, rows: ScoreInput, options: dict[str, Any]) -> np.ndarray:
        if options["labeled"]:
            try:
                text = Path(options["labeled"]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"--labeled: {exc}") from None
            ids = [line.strip() for line in text.splitlines() if line.strip()]
            if not ids:
                raise CommandError("--labeled: the file names no id")
            return labeled_from_ids(rows, ids)
        share = options["labeled_share"]
        if not 0.0 < share < 1.0:
            raise CommandError("--labeled-share is between 0 and 1 (both excluded)")
        return labeled_from_share(rows, share, options["seed"])
