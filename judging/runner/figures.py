"""The runner's figures on a scorecard, and how the two orders of a row combine (NumPy).

Per split: calls (and cache hits, failures), how each output was read (direct / verifier /
unparsed / truncated at the token budget / failed), tokens (reasoning tokens among them) and
their cost, latency percentiles, the share of A verdicts in each order, and, with both orders,
position consistency: the share of (row, run) pairs answered in both orders whose two verdicts
agree, overall and per criterion. Verdicts are in the row's terms
(``model_a`` is the row's A response whatever the order it was shown in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judging.metrics import INVALID_LABEL, MODEL_A, MODEL_B

PERCENTILES = (50, 90, 99)
METHODS = ("direct", "verifier", "unparsed", "truncated", "failed")


@dataclass(frozen=True)
class CallRecord:
    """One stored call of a run, as the figures need it."""

    question_id: str
    split: str
    criterion: str
    run_index: int
    order: str
    verdict: str | None
    parse_method: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    cached: bool
    reasoning_tokens: int = 0


def combine_orders(ab: str | None, ba: str | None, *, both: bool) -> str | None:
    """A row's verdict in one run: ``None`` (missing) when a needed call failed or was never
    made; with both orders the agreeing verdict, else invalid; an unparsed output is invalid."""
    if not both:
        return ab
    if ab is None or ba is None:
        return None
    if ab == ba and ab in (MODEL_A, MODEL_B):
        return ab
    return INVALID_LABEL


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def cost_of(
    prompt_tokens: int, completion_tokens: int, price_in: float | None, price_out: float | None
) -> float | None:
    """The cost of the tokens at prices per million (None without any price)."""
    if price_in is None and price_out is None:
        return None
    return round(
        (prompt_tokens * (price_in or 0.0) + completion_tokens * (price_out or 0.0)) / 1e6, 6
    )


def split_figures(
    records: Sequence[CallRecord],
    *,
    both: bool,
    price_in: float | None = None,
    price_out: float | None = None,
) -> dict:
    """The runner's figures over ``records`` (the calls of one split)."""
    n = len(records)
    method = np.array([r.parse_method for r in records], dtype=object)
    order = np.array([r.order for r in records], dtype=object)
    verdict = np.array([r.verdict or "" for r in records], dtype=object)
    prompt = int(sum(r.prompt_tokens for r in records))
    completion = int(sum(r.completion_tokens for r in records))
    answered = method != "failed"
    latency = np.array([r.latency_ms for r in records], dtype=float)[answered]
    out: dict = {
        "calls": n,
        "cached": int(sum(r.cached for r in records)),
        "parse": {m: int((method == m).sum()) for m in METHODS},
        "tokens": {
            "prompt": prompt,
            "completion": completion,
            "reasoning": int(sum(r.reasoning_tokens for r in records)),
            "total": prompt + completion,
        },
        "cost": cost_of(prompt, completion, price_in, price_out),
        "latency_ms": {
            f"p{p}": (round(float(np.percentile(latency, p)), 1) if latency.size else None)
            for p in PERCENTILES
        },
        "a_share": {},
    }
    for o in ("ab", "ba") if both else ("ab",):
        valid = (order == o) & np.isin(verdict, [MODEL_A, MODEL_B])
        out["a_share"][o] = {
            "value": _pct(int((valid & (verdict == MODEL_A)).sum()), int(valid.sum())),
            "n": int(valid.sum()),
        }
    if both:
        out["position_consistency"] = _consistency(records)
    return out


def _consistency(records: Sequence[CallRecord]) -> dict:
    pairs: dict[tuple[str, int], dict[str, CallRecord]] = {}
    for r in records:
        if r.parse_method != "failed":
            pairs.setdefault((r.question_id, r.run_index), {})[r.order] = r
    agree: dict[str, list[int]] = {}
    for calls in pairs.values():
        if len(calls) < 2:
            continue
        ab, ba = calls["ab"], calls["ba"]
        same = int(ab.verdict is not None and ab.verdict == ba.verdict)
        counts = agree.setdefault(ab.criterion, [0, 0])
        counts[0] += same
        counts[1] += 1
    total_agree = sum(c[0] for c in agree.values())
    total = sum(c[1] for c in agree.values())
    return {
        "value": _pct(total_agree, total),
        "agree": total_agree,
        "n": total,
        "per_criterion": {
            c: {"value": _pct(k, m), "agree": k, "n": m} for c, (k, m) in sorted(agree.items())
        },
    }


def _shown(value: float | None, unit: str = "%") -> str:
    return "n/a" if value is None else f"{value:.2f}{unit}"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} ms"


def runner_lines(figures: dict, *, currency: str = "") -> list[str]:
    """The runner's figures of one split as lines of text (tables and the job card)."""
    parse = figures["parse"]
    tokens = figures["tokens"]
    latency = figures["latency_ms"]
    lines = [
        f"calls {figures['calls']:,} ({figures['cached']:,} from the cache); read directly "
        f"{parse['direct']:,}, by the verifier {parse['verifier']:,}, unparsed "
        f"{parse['unparsed']:,}, truncated {parse.get('truncated', 0):,}, failed "
        f"{parse['failed']:,}",
        f"tokens {tokens['total']:,} (prompt {tokens['prompt']:,}, completion "
        f"{tokens['completion']:,}, of which reasoning {tokens.get('reasoning', 0):,})"
        + (
            ""
            if figures.get("cost") is None
            else f"; cost {figures['cost']:.4f} {currency}".rstrip()
        )
        + "; latency "
        + ", ".join(f"p{p} {_ms(latency[f'p{p}'])}" for p in PERCENTILES),
        "A verdicts: "
        + ", ".join(
            f"{_shown(v['value'])} in order {o.upper()} (of {v['n']:,})"
            for o, v in figures["a_share"].items()
        ),
    ]
    consistency = figures.get("position_consistency")
    if consistency:
        per = ", ".join(
            f"{c} {_shown(v['value'])}" for c, v in consistency["per_criterion"].items()
        )
        lines.append(
            f"position consistency {_shown(consistency['value'])} "
            f"(the two orders agree in {consistency['agree']:,} of {consistency['n']:,} "
            f"{'row' if consistency['n'] == 1 else 'rows'})" + (f"; {per}" if per else "")
        )
    return lines
