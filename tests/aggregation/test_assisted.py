"""The pure replay of routing and early stopping (aggregation/assisted.py), hand-checked."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aggregation import assisted
from aggregation.assisted import NO_ANSWER, TIE, A, B
from aggregation.rules import PREF_A, PREF_B, PREF_NONE, can_still_be_kept, classify

EVERY_ORDER = np.array(list(itertools.product((A, B, TIE), repeat=3)), dtype=np.int8)


def test_can_still_be_kept_for_k3():
    # (a, b, tie) so far -> can the item still be kept with 3 votes?
    cases = {
        (0, 0, 0): True,
        (1, 0, 0): True,
        (0, 0, 1): True,
        (1, 1, 0): False,  # A and B: a split whatever comes
        (0, 0, 2): False,  # two ties: no strict majority of 3 left
        (1, 0, 1): True,
        (2, 0, 0): True,
    }
    a, b, t = (np.array(x) for x in zip(*cases, strict=True))
    assert can_still_be_kept(a, b, t, 3).tolist() == list(cases.values())


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_can_still_be_kept_agrees_with_every_completion(k):
    """Exhaustive: an item can still be kept iff some completion of its votes to k is kept."""
    for m in range(k + 1):
        for prefix in itertools.product((A, B, TIE), repeat=m):
            done = np.array(prefix, dtype=np.int8).reshape(1, m)
            counts = [(done == code).sum(axis=1) for code in (A, B, TIE)]
            possible = False
            for rest in itertools.product((A, B, TIE), repeat=k - m):
                v = np.array(prefix + rest)
                outcome, _ = classify([(v == A).sum()], [(v == B).sum()], [(v == TIE).sum()], k=k)
                possible |= outcome[0] in (0, 1)
            assert bool(can_still_be_kept(*counts, k)[0]) is possible, (prefix, k)


def test_early_stopping_never_changes_a_label_over_every_vote_order():
    audit = np.zeros(len(EVERY_ORDER), dtype=bool)
    full = assisted.replay(EVERY_ORDER, policy=assisted.FULL, audit=audit)
    stopped = assisted.replay(EVERY_ORDER, policy=assisted.EARLY_STOPPING, audit=audit)
    assert stopped.preference.tolist() == full.preference.tolist()
    asked = dict(zip(map(tuple, EVERY_ORDER.tolist()), stopped.votes.tolist(), strict=True))
    assert asked[(A, B, A)] == 2 and asked[(TIE, TIE, A)] == 2 and asked[(B, A, TIE)] == 2
    assert asked[(A, TIE, B)] == 3 and asked[(A, A, B)] == 3 and asked[(TIE, A, TIE)] == 3
    # Of the 27 orders, 6 start A, B or B, A and 3 start tie, tie; each saves its third vote.
    assert int(stopped.votes.sum()) == 27 * 3 - 9
    assert (stopped.provenance == assisted.EARLY_STOPPED).sum() == 9


def test_the_audit_share_always_gets_every_vote():
    audit = np.ones(len(EVERY_ORDER), dtype=bool)
    routable = np.ones(len(EVERY_ORDER), dtype=bool)
    panel = np.full(len(EVERY_ORDER), PREF_A, dtype=np.int8)
    for policy in assisted.POLICIES:
        routed = assisted.replay(
            EVERY_ORDER, policy=policy, audit=audit, panel_choice=panel, routable=routable
        )
        assert routed.votes.tolist() == [3] * 27
        assert set(routed.provenance.tolist()) == {assisted.HUMAN}


def test_vote_counts_on_a_tiny_example():
    votes = np.array([[A, A, A], [A, B, A], [B, B, TIE], [TIE, TIE, B], [B, A, B]], dtype=np.int8)
    panel = np.array([PREF_A, PREF_B, PREF_B, PREF_NONE, PREF_A], dtype=np.int8)
    routable = panel != PREF_NONE
    audit = np.array([False, False, False, False, True])
    kwargs = {"audit": audit, "panel_choice": panel, "routable": routable}
    full = assisted.replay(votes, policy="full", **kwargs)
    assert full.votes.tolist() == [3, 3, 3, 3, 3]
    assert full.preference.tolist() == [PREF_A, PREF_NONE, PREF_B, PREF_NONE, PREF_NONE]
    early = assisted.replay(votes, policy="early_stopping", **kwargs)
    assert early.votes.tolist() == [3, 2, 3, 2, 3]  # the audit item (B, A, B) keeps its 3
    routing = assisted.replay(votes, policy="routing", **kwargs)
    # Item 0: the verifier (A) agrees; item 1: B panel, A verifier -> overruled, 3 votes;
    # item 2: agrees; item 3: not routable; item 4: audit.
    assert routing.votes.tolist() == [1, 3, 1, 3, 3]
    assert routing.preference.tolist() == [PREF_A, PREF_NONE, PREF_B, PREF_NONE, PREF_NONE]
    assert routing.provenance.tolist() == [
        assisted.PANEL_HUMAN,
        assisted.PANEL_OVERRULED,
        assisted.PANEL_HUMAN,
        assisted.HUMAN,
        assisted.HUMAN,
    ]
    both = assisted.replay(votes, policy="both", **kwargs)
    assert both.votes.tolist() == [1, 2, 1, 2, 3]  # the overruled split stops after 2 too
    figures = assisted.policy_figures(votes, policy="both", seconds_per_vote=30.0, **kwargs)
    assert figures.human_votes == 9 and figures.kept == 2
    assert figures.votes_per_kept == 4.5 and figures.expert_minutes == 4.5
    assert figures.agree_full == 1.0
    assert figures.provenance == {
        "human": 1,
        "early_stopped": 1,
        "panel_human": 2,
        "panel_overruled": 1,
    }


def test_routing_with_a_perfect_panel_and_verifier_equals_the_truth():
    rng = np.random.default_rng(3)
    truth = np.where(rng.random(200) < 0.5, PREF_A, PREF_B).astype(np.int8)
    true_code = np.where(truth == PREF_A, A, B)
    noisy = rng.integers(0, 3, size=(200, 2))
    votes = np.column_stack([true_code, noisy]).astype(np.int8)  # the first vote is right
    audit = np.zeros(200, dtype=bool)
    routed = assisted.replay(
        votes, policy="routing", audit=audit, panel_choice=truth, routable=np.ones(200, bool)
    )
    assert routed.preference.tolist() == truth.tolist()
    assert routed.votes.tolist() == [1] * 200
    figures = assisted.policy_figures(
        votes,
        policy="routing",
        audit=audit,
        seconds_per_vote=60.0,
        panel_choice=truth,
        routable=np.ones(200, bool),
        truth=truth,
    )
    assert figures.agree_truth == 1.0 and figures.votes_per_kept == 1.0


def test_panel_verdict_unanimous_consistent_routable():
    answers = np.array(
        [
            [[A, A], [A, A]],  # both judges A in both orders: routable A
            [[B, B], [B, B]],  # routable B
            [[A, A], [B, B]],  # consistent, not unanimous
            [[A, B], [A, B]],  # both position-biased: unanimous per order, not consistent
            [[A, A], [A, B]],  # one biased judge: neither
            [[A, A], [NO_ANSWER, A]],  # a missing answer: neither
        ]
    )
    verdict = assisted.panel_verdict(answers)
    assert verdict.choice.tolist() == [PREF_A, PREF_B, PREF_NONE, PREF_NONE, PREF_NONE, PREF_NONE]
    assert verdict.consistent.tolist() == [True, True, True, False, False, False]
    assert verdict.unanimous.tolist() == [True, True, False, True, False, False]
    assert verdict.routable.tolist() == [True, True, False, False, False, False]


def test_audit_counterfactual_counts_labels_that_would_differ():
    votes = np.array([[A, A, A], [A, B, A], [A, TIE, TIE], [B, A, A], [TIE, A, A]], dtype=np.int8)
    panel = np.full(5, PREF_A, dtype=np.int8)
    result = assisted.audit_counterfactual(votes, panel, np.ones(5, dtype=bool))
    # Verifier agrees on items 0, 1, 2; items 1 (split) and 2 (two ties) were dropped in full.
    assert (result.items, result.routable, result.verifier_agreed) == (5, 5, 3)
    assert (result.differ, result.differ_dropped, result.differ_side) == (2, 2, 0)


def test_panel_agreement_per_criterion_with_a_cluster_bootstrap():
    # 4 samples x 2 criteria; criterion 0: the panel agrees on 3 of 4; criterion 1: on 2 of 2
    # (two kept labels where the panel named no side).
    sample = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    criterion = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    human = np.array([PREF_A, PREF_B, PREF_A, PREF_A, PREF_B, PREF_B, PREF_A, PREF_NONE])
    panel = np.array([PREF_A, PREF_B, PREF_B, PREF_NONE, PREF_B, PREF_B, PREF_A, PREF_A])
    result = assisted.panel_agreement(
        sample, criterion, human, panel, n_samples=4, n_criteria=2, n_boot=500, seed=1
    )
    assert result.labels.tolist() == [4, 3]
    assert result.covered.tolist() == [4, 2]
    assert result.agreed.tolist() == [3, 2]
    assert result.agreement.tolist() == [0.75, 1.0]
    assert result.coverage.tolist() == [1.0, 2 / 3]
    assert 0.0 <= result.low[0] < 0.75 < result.high[0] <= 1.0
    assert result.low[1] == result.high[1] == 1.0
    again = assisted.panel_agreement(
        sample, criterion, human, panel, n_samples=4, n_criteria=2, n_boot=500, seed=1
    )
    assert again.low.tolist() == result.low.tolist()


def test_the_synthetic_project_is_reproducible_and_its_panel_follows_its_bias():
    sure = {"position_bias": 0.0, "judge_accuracy": 1.0, "hard_share": 0.0}
    one = assisted.synthetic_project(n_samples=300, seed=5, **sure)
    two = assisted.synthetic_project(n_samples=300, seed=5, **sure)
    assert np.array_equal(one.votes, two.votes)
    assert one.panel.routable.all() and (one.panel.choice == one.truth).all()
    biased = assisted.synthetic_project(n_samples=300, seed=5, position_bias=1.0)
    assert not biased.panel.consistent.any() and not biased.panel.routable.any()


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="items x k"):
        assisted.replay(np.zeros((2, 2)), policy="full", audit=np.zeros(2, bool))
    with pytest.raises(ValueError, match="unknown policy"):
        assisted.replay(np.zeros((2, 3)), policy="fast", audit=np.zeros(2, bool))
    with pytest.raises(ValueError, match="panel"):
        assisted.replay(np.zeros((2, 3)), policy="routing", audit=np.zeros(2, bool))


def test_the_bench_prints_every_policy_on_a_small_synthetic_project():
    script = Path(__file__).resolve().parents[2] / "bench" / "assisted.py"
    out = subprocess.run(
        [sys.executable, str(script), "--no-demo", "--samples", "300", "--seed", "2"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith("| ") and "|---" not in line]
    assert [r.split("|")[1].strip() for r in rows[1:]] == list(assisted.POLICIES)
    assert "1,500 items" in out
