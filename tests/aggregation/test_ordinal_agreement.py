"""Ordinal agreement (weighted κ, ordinal / interval α, Gwet's AC1 / AC2) against references."""

from __future__ import annotations

import itertools
import subprocess
import sys

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from aggregation import ordinal
from aggregation.bootstrap import resample_counts

TOL = 1e-9
SCORES = [1, 2, 3, 4, 5]
GRADES = [-2, -1, 0, 1, 2]

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers,
# 12 units, values 1..5, "." = missing. Gwet (2014, Handbook of Inter-Rater Reliability, 4th ed.,
# p. 120) uses the same table as his 4 raters x 12 subjects example ("cac.raw4raters").
RELIABILITY_DATA = """
1 2 3 3 2 1 4 1 2 . . .
1 2 3 3 2 2 4 1 2 5 . 3
. 3 3 3 2 3 4 2 2 5 1 .
1 2 3 3 2 4 4 1 2 5 1 .
"""


def _values() -> np.ndarray:
    rows = [line.split() for line in RELIABILITY_DATA.strip().splitlines()]
    return np.array([[float(v) if v != "." else np.nan for v in row] for row in rows])


def _codes() -> np.ndarray:
    return ordinal.codes_of(_values(), SCORES)


def test_krippendorff_2011_ordinal_and_interval_alpha():
    """The paper's α: ordinal 0.815, interval 0.849 (nominal 0.743 is the nominal module's)."""
    figures = ordinal.ordinal_figures(_codes(), values=SCORES, n_boot=0)
    assert round(figures["alpha_ordinal"]["value"], 3) == 0.815
    assert round(figures["alpha_interval"]["value"], 3) == 0.849
    assert figures["alpha_interval"]["pairable_values"] == 40
    # The reference package on the same table, to 1e-9.
    for level in ("ordinal", "interval"):
        ref = krippendorff.alpha(_values(), level_of_measurement=level)
        assert figures[f"alpha_{level}"]["value"] == pytest.approx(ref, abs=TOL)


@pytest.mark.parametrize(
    ("weights", "pa", "pe", "coefficient"),
    [
        ("identity", 0.818, 0.190, 0.775),
        ("linear", 0.939, 0.571, 0.859),
        ("quadratic", 0.975, 0.714, 0.914),
        ("ordinal", 0.968, 0.685, 0.899),
    ],
)
def test_gwet_handbook_4_raters_12_subjects(weights, pa, pe, coefficient):
    """Gwet's AC1 / AC2 with the handbook's (and irrCAC's) figures, rounded to 3 places."""
    stat = ordinal.gwet_ac(_codes(), values=SCORES, weights=weights)
    assert round(stat["observed"], 3) == pa
    assert round(stat["expected"], 3) == pe
    assert round(stat["value"], 3) == coefficient
    assert stat["items"] == 11  # subject 12 has one rating: not in p_a


def _gwet_reference(matrix: np.ndarray, w: np.ndarray) -> float:
    """Gwet's multi-rater formula written item by item, as the handbook states it."""
    q = len(w)
    pa_terms, pi = [], np.zeros(q)
    n_rated = 0
    for item in matrix.T:
        r = np.bincount(item[item >= 0], minlength=q).astype(float)
        ri = r.sum()
        if ri >= 1:
            n_rated += 1
            pi += r / ri
        if ri >= 2:
            pa_terms.append(sum(r[k] * ((w[k] * r).sum() - 1) for k in range(q)) / (ri * (ri - 1)))
    pi /= n_rated
    pa = np.mean(pa_terms)
    pe = w.sum() / (q * (q - 1)) * (pi * (1 - pi)).sum()
    return (pa - pe) / (1 - pe)


def _random_matrix(seed: int, raters: int = 5, items: int = 60, q: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, q, size=items)
    noise = rng.integers(-1, 2, size=(raters, items))
    matrix = np.clip(truth + noise, 0, q - 1)
    matrix[rng.random((raters, items)) < 0.3] = -1
    return matrix


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_statistic_matches_a_reference_on_random_data(seed):
    """sklearn's weighted κ per pair, the krippendorff package, Gwet's formula item by item."""
    matrix = _random_matrix(seed)
    figures = ordinal.ordinal_figures(matrix, values=GRADES, min_overlap=2, n_boot=0)
    for kind in ("linear", "quadratic"):
        kappas = []
        for i, j in itertools.combinations(range(len(matrix)), 2):
            shared = (matrix[i] >= 0) & (matrix[j] >= 0)
            kappas.append(
                cohen_kappa_score(
                    matrix[i][shared], matrix[j][shared], weights=kind, labels=range(5)
                )
            )
        assert figures[f"cohen_{kind}"]["value"] == pytest.approx(np.mean(kappas), abs=TOL)
        assert figures[f"cohen_{kind}"]["pairs_used"] == 10
    as_values = np.where(matrix >= 0, np.array(GRADES)[matrix], np.nan)
    for level in ("ordinal", "interval"):
        ref = krippendorff.alpha(as_values, level_of_measurement=level, value_domain=GRADES)
        assert figures[f"alpha_{level}"]["value"] == pytest.approx(ref, abs=TOL)
    for name, kind in zip(
        ordinal.GWET, ("identity", "linear", "quadratic", "ordinal"), strict=True
    ):
        ref = _gwet_reference(matrix, ordinal.gwet_weights(GRADES, kind))
        assert figures[name]["value"] == pytest.approx(ref, abs=TOL)


def test_weighted_cohen_of_two_raters_matches_sklearn():
    a = [0, 1, 2, 3, 4, 4, 2, 1, -1, 3]
    b = [0, 2, 2, 4, 4, 3, 1, 1, 2, -1]
    shared = [k for k in range(10) if a[k] >= 0 and b[k] >= 0]
    for kind in ("linear", "quadratic"):
        stat = ordinal.weighted_cohen_kappa(a, b, values=GRADES, weights=kind)
        ref = cohen_kappa_score(
            [a[k] for k in shared], [b[k] for k in shared], weights=kind, labels=range(5)
        )
        assert stat["value"] == pytest.approx(ref, abs=TOL)


def test_ac1_stays_high_where_kappa_collapses_on_skewed_labels():
    """Nearly every vote a tie: raw agreement 96%, κ about 0, AC1 close to 1 (Gwet's point)."""
    items = 50
    a = np.full(items, 2)
    b = np.full(items, 2)
    a[0], b[1] = 3, 1  # two disagreements, each rater uses one other grade once
    figures = ordinal.ordinal_figures(np.vstack([a, b]), values=GRADES, n_boot=0, min_overlap=2)
    assert figures["cohen_linear"]["value"] < 0.01
    assert figures["ac1"]["value"] > 0.95
    assert round(figures["ac1"]["observed"], 2) == 0.96


def test_bootstrap_resamples_samples_and_is_reproducible():
    """All items of a sample move together; seed 0 gives the same interval twice."""
    matrix = _random_matrix(4, items=90)
    clusters = np.repeat(np.arange(30), 3)  # 30 samples x 3 criteria
    first = ordinal.ordinal_figures(matrix, values=GRADES, clusters=clusters, n_boot=200)
    again = ordinal.ordinal_figures(matrix, values=GRADES, clusters=clusters, n_boot=200)
    assert first["samples"] == 30 and first["bootstrap"]["unit"] == "sample"
    for name in ordinal.STATISTICS:
        stat = first[name]
        assert stat["ci"] == again[name]["ci"]
        if name.startswith("cohen"):  # fewer than 20 shared items for some pairs
            continue
        lo, hi = stat["ci"]
        assert lo <= stat["value"] <= hi and stat["ci_replicates"] == 200
    # Each replicate is the statistic on the resampled samples: 20 of them, recomputed directly.
    rng = np.random.default_rng(0)
    direct = {"alpha_interval": [], "ac2_quadratic": []}
    for _ in range(20):
        counts = resample_counts(rng, 30, 1)[0]
        columns = np.concatenate(
            [np.tile(np.nonzero(clusters == s)[0], c) for s, c in enumerate(counts) if c]
        )
        rep = ordinal.ordinal_figures(matrix[:, columns], values=GRADES, n_boot=0)
        for name in direct:
            direct[name].append(rep[name]["value"])
    small = ordinal.ordinal_figures(matrix, values=GRADES, clusters=clusters, n_boot=20)
    for name, values in direct.items():
        assert small[name]["ci"] == pytest.approx(np.percentile(values, [2.5, 97.5]), abs=TOL)


def test_undefined_cases_say_why():
    one_rater = np.array([[0, 1, 2]])
    figures = ordinal.ordinal_figures(one_rater, values=GRADES, n_boot=0)
    for name in ordinal.STATISTICS:
        assert figures[name]["value"] is None and figures[name]["undefined_reason"]
    same = np.full((3, 10), 2)
    figures = ordinal.ordinal_figures(same, values=GRADES, n_boot=0, min_overlap=2)
    assert figures["alpha_ordinal"]["value"] is None
    assert "expected disagreement is 0" in figures["alpha_ordinal"]["undefined_reason"]
    assert figures["cohen_linear"]["value"] is None
    assert figures["ac1"]["value"] == 1.0  # full agreement on a 5-grade scale is defined
    with pytest.raises(ValueError, match="increasing"):
        ordinal.ordinal_figures(same, values=[1, 1, 2])


def test_module_stays_free_of_django():
    code = "import sys, aggregation.ordinal; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_votes_in_long_form_give_the_matrix_figures():
    """Long-form votes (annotator, item, sample, value) equal the rater x item matrix."""
    values = _values()
    rater, unit = np.nonzero(~np.isnan(values))
    figures = ordinal.ordinal_figures_from_votes(
        annotator=rater * 7 + 3,  # any ids
        item=unit * 10,
        sample=unit // 2,
        value=values[rater, unit],
        values=SCORES,
        n_boot=50,
    )
    direct = ordinal.ordinal_figures(
        _codes(), values=SCORES, clusters=np.arange(12) // 2, n_boot=50
    )
    for name in ordinal.STATISTICS:
        assert figures[name] == direct[name]
    with pytest.raises(ValueError, match="two votes"):
        ordinal.ordinal_figures_from_votes(
            annotator=[1, 1], item=[5, 5], sample=[0, 0], value=[1, 2], values=SCORES
        )


# --- the aggregation job and the dashboard --------------------------------------------------


def _graded_project(project, annotators):
    """Graded votes: 12 samples x 5 criteria, 3 annotators each, grades near a true grade."""
    from annotation import scales
    from annotation.models import Vote
    from tests.aggregation.votes import criteria_of
    from tests.conftest import make_sample

    project.label_scale = scales.GRADED
    project.save(update_fields=["label_scale"])
    rng = np.random.default_rng(3)
    crits = criteria_of(project)
    expected = []  # (annotator id, item, sample, grade)
    for i in range(12):
        sample = make_sample(project, f"g{i}")
        trio = [annotators[(i + d) % 5] for d in range(3)]
        for criterion in crits:
            truth = int(rng.integers(-2, 3))
            for user in trio:
                grade = int(np.clip(truth + rng.integers(-1, 2), -2, 2))
                Vote.objects.create(
                    sample=sample, criterion=criterion, annotator=user, round=0,
                    choice=scales.choice_from_grade(grade), grade=grade,
                    rationale="r", seconds=5.0,
                )  # fmt: skip
                expected.append((user.pk, sample.pk * 1000 + criterion.pk, sample.pk, grade))
    return np.array(expected)


@pytest.mark.django_db
def test_the_aggregation_job_stores_the_grades_ordinal_figures(project, annotators):
    from aggregation.models import AgreementSnapshot
    from aggregation.services.aggregate import project_aggregate

    expected = _graded_project(project, annotators)
    project_aggregate(project=project, split="open_ended", min_overlap=5, n_boot=40, seed=0)
    figures = AgreementSnapshot.objects.get(project=project, split="open_ended").figures
    ordinal_part = figures["ordinal"]
    assert ordinal_part["scale"] == "graded" and set(ordinal_part) == {"scale", "grades"}
    grades = ordinal_part["grades"]
    assert grades["items"] == 60 and grades["samples"] == 12 and grades["votes"] == 180
    direct = ordinal.ordinal_figures_from_votes(
        annotator=expected[:, 0], item=expected[:, 1], sample=expected[:, 2],
        value=expected[:, 3], values=GRADES, n_boot=40, min_overlap=5,
    )  # fmt: skip
    for name in ordinal.STATISTICS:
        assert grades[name]["value"] == pytest.approx(direct[name]["value"], abs=TOL)
        assert grades[name]["ci"] == pytest.approx(direct[name]["ci"], abs=TOL)


@pytest.mark.django_db
def test_a_pointwise_split_has_scores_and_differences_and_the_dashboard_shows_them(
    client, project, annotators, lead
):
    from django.urls import reverse

    from aggregation.models import AgreementSnapshot
    from aggregation.services.aggregate import project_aggregate
    from annotation import scales
    from annotation.models import Vote
    from tests.aggregation.votes import criteria_of
    from tests.conftest import make_sample

    project.label_scale = scales.POINTWISE
    project.save(update_fields=["label_scale"])
    crit = criteria_of(project)[0]
    table = [(5, 1), (4, 2), (3, 3), (2, 4)]  # each annotator's (score_a, score_b) offsets
    for i in range(4):
        sample = make_sample(project, f"pw{i}")
        for d, user in enumerate(annotators[:3]):
            a, b = table[(i + d) % 4]
            Vote.objects.create(
                sample=sample, criterion=crit, annotator=user, round=0,
                choice=scales.choice_from_scores(a, b), score_a=a, score_b=b,
                rationale="r", seconds=5.0,
            )  # fmt: skip
    project_aggregate(project=project, split="open_ended", min_overlap=2, n_boot=20)
    part = AgreementSnapshot.objects.get(project=project, split="open_ended").figures["ordinal"]
    assert part["scale"] == "pointwise"
    assert part["scores"]["items"] == 8 and part["scores"]["votes"] == 24
    assert part["differences"]["items"] == 4 and part["differences"]["votes"] == 12
    assert part["differences"]["values"] == list(range(-4, 5))
    values = np.array(
        [[a - b for a, b in (table[(i + d) % 4] for i in range(4))] for d in range(3)]
    )
    ref = krippendorff.alpha(values.astype(float), level_of_measurement="interval")
    assert part["differences"]["alpha_interval"]["value"] == pytest.approx(ref, abs=TOL)
    client.force_login(lead)
    page = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert "Ordinal agreement · Each response" in page
    assert "Ordinal agreement · Score difference A − B" in page
    assert "Gwet&#x27;s AC2, quadratic weights" in page


@pytest.mark.django_db
def test_a_revised_grade_with_the_same_choice_refreshes_the_figures(project, annotators):
    from aggregation.models import AgreementSnapshot
    from aggregation.services.aggregate import project_aggregate
    from annotation.models import Vote

    _graded_project(project, annotators)
    project_aggregate(project=project, split="open_ended", min_overlap=5, n_boot=0)
    before = AgreementSnapshot.objects.get(project=project, split="open_ended").figures
    again = project_aggregate(project=project, split="open_ended", min_overlap=5, n_boot=0)
    assert again["splits"]["open_ended"]["agreement"] == "unchanged"
    vote = Vote.objects.filter(grade=1).order_by("id").first()
    Vote.objects.filter(pk=vote.pk).update(grade=2)  # still A: the choice is unchanged
    rerun = project_aggregate(project=project, split="open_ended", min_overlap=5, n_boot=0)
    assert rerun["splits"]["open_ended"]["agreement"] == "computed"
    after = AgreementSnapshot.objects.get(project=project, split="open_ended").figures
    assert after["cohen"] == before["cohen"]  # the nominal figures see the same choices
    assert (
        after["ordinal"]["grades"]["alpha_interval"]
        != before["ordinal"]["grades"]["alpha_interval"]
    )
