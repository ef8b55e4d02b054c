"""Replay fully annotated projects under the four vote policies: full protocol, early stopping,
judge-assisted routing, both.

    .venv/bin/python bench/assisted.py                        # the demo and a 5,000-sample project
    .venv/bin/python bench/assisted.py --no-demo --samples 5000 --judges 2 \\
        --judge-accuracy 0.9 --position-bias 0.1 --audit-share 0.2 --seed 0

The synthetic project: every (sample, criterion) has a true side; 9 annotators of fixed
accuracies (k = 3 per sample) vote on it, with ties and a share of hard items; a panel of
simulated judges of the given accuracy and position bias pre-labels it (both orders). The
demo: the embedded demo's fully annotated samples (built in a throwaway SQLite database under
a temporary folder, as ``make demo`` builds it), its truth from the demo content, the same
simulated panel. The replay and the figures are ``aggregation.assisted``; the audit share is
drawn by ``annotation.audit``.

Per policy it prints: human votes, human votes per kept label, expert minutes (votes x the
median seconds per vote), kept labels, agreement of the kept labels with the full-protocol
labels (all kept labels; and among labels the full protocol keeps too), agreement with the
truth, and the labels per provenance.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aggregation import assisted  # noqa: E402
from aggregation.rules import PREF_A, PREF_B  # noqa: E402


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def report(
    title: str,
    votes: np.ndarray,
    *,
    audit: np.ndarray,
    seconds: float,
    panel: assisted.PanelVerdict,
    truth: np.ndarray | None,
) -> list[assisted.PolicyFigures]:
    """Print one table: a row per policy."""
    rows = [
        assisted.policy_figures(
            votes,
            policy=policy,
            audit=audit,
            seconds_per_vote=seconds,
            panel_choice=panel.choice,
            routable=panel.routable,
            truth=truth,
        )
        for policy in assisted.POLICIES
    ]
    base = rows[0].votes_per_kept or 0.0
    print(f"\n## {title}")
    print(
        f"{len(votes):,} items, audit share {audit.mean():.1%} of items, routable "
        f"{panel.routable.mean():.1%}, median {seconds:.1f} s per vote\n"
    )
    print(
        "| policy | human votes | votes / kept label | vs full | expert minutes | kept labels "
        "| = full (all kept) | = full (both kept) | = truth | human / early / panel+human "
        "/ overruled |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        change = (r.votes_per_kept or 0) / base - 1 if base else 0.0
        shown = "" if r.policy == assisted.FULL else f"{change:+.1%}"
        p = r.provenance
        print(
            f"| {r.policy} | {r.human_votes:,} | {r.votes_per_kept:.3f} | {shown} "
            f"| {r.expert_minutes:,.0f} | {r.kept:,} | {_pct(r.agree_full)} "
            f"| {_pct(r.agree_full_both_kept)} | {_pct(r.agree_truth)} "
            f"| {p['human']:,} / {p['early_stopped']:,} / {p['panel_human']:,} "
            f"/ {p['panel_overruled']:,} |"
        )
    return rows


def synthetic(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    project = assisted.synthetic_project(
        n_samples=args.samples,
        n_criteria=args.criteria,
        judges=args.judges,
        judge_accuracy=args.judge_accuracy,
        position_bias=args.position_bias,
        seed=args.seed,
    )
    audit = assisted.item_audit(
        args.seed, project.external_ids, args.audit_share, project.sample_index
    )
    report(
        f"Synthetic: {args.samples:,} samples x {args.criteria} criteria, {args.judges} "
        f"judge(s) of accuracy {args.judge_accuracy} and position bias {args.position_bias}",
        project.votes,
        audit=audit,
        seconds=float(np.median(project.seconds)),
        panel=project.panel,
        truth=project.truth,
    )
    print(f"\n({time.perf_counter() - started:.2f} s)")


def demo(args: argparse.Namespace) -> None:
    """The demo's fully annotated samples, from a throwaway SQLite database."""
    started = time.perf_counter()
    scratch = tempfile.mkdtemp(prefix="bench-assisted-")
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["VAR_DIR"] = scratch
    os.environ["MEDIA_ROOT"] = str(Path(scratch) / "media")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.models import Vote
    from demo.build import demo_build
    from demo.content import demo_samples

    call_command("migrate", verbosity=0)
    project = demo_build().project
    rows = list(
        Vote.objects.filter(sample__project=project, sample__is_seed=False, round=Vote.FORMAL_ROUND)
        .order_by("sample_id", "criterion_id", "id")
        .values_list("sample__external_id", "criterion__key", "choice", "seconds")
    )
    items: dict[tuple[str, str], list[str]] = {}
    seconds = []
    for external_id, key, choice, secs in rows:
        items.setdefault((external_id, key), []).append(choice)
        seconds.append(secs)
    k = project.annotators_per_sample
    complete = [(item, choices) for item, choices in items.items() if len(choices) == k]
    codes = {"A": assisted.A, "B": assisted.B, "tie": assisted.TIE}
    votes = np.array([[codes[c] for c in choices] for _, choices in complete], dtype=np.int8)
    truths = {s.external_id: s.truth for s in demo_samples()}
    truth = np.array(
        [PREF_A if truths[e][key] == "A" else PREF_B for (e, key), _ in complete], dtype=np.int8
    )
    external_ids = sorted({e for (e, _), _ in complete})
    sample_index = np.searchsorted(external_ids, [e for (e, _), _ in complete])
    audit = assisted.item_audit(project.audit_seed, external_ids, args.audit_share, sample_index)
    panel = assisted.simulated_panel(
        truth,
        judges=args.judges,
        judge_accuracy=args.judge_accuracy,
        position_bias=args.position_bias,
        rng=np.random.default_rng(args.seed),
    )
    report(
        f"Demo: {len(external_ids)} fully annotated samples, simulated panel of {args.judges} "
        f"judge(s), accuracy {args.judge_accuracy}, position bias {args.position_bias}",
        votes,
        audit=audit,
        seconds=float(np.median(seconds)),
        panel=panel,
        truth=truth,
    )
    print(f"\n({time.perf_counter() - started:.2f} s, the demo build included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--criteria", type=int, default=5)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument("--judge-accuracy", type=float, default=0.9)
    parser.add_argument("--position-bias", type=float, default=0.1)
    parser.add_argument("--audit-share", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-demo", action="store_true", help="Only the synthetic project.")
    args = parser.parse_args()
    synthetic(args)
    if not args.no_demo:
        demo(args)


if __name__ == "__main__":
    main()
