"""The review queue's cells: its samples counted per combination of the queue's filters.

One read over a split's labels (or one sample's) gives, per sample of the queue (non-seed, any
status, holding a kept label): the kinds and provenances of its kept labels as bit masks,
whether any of its labels is not kept unanimously and whether it is reviewed; counted once per
sample (criterion null) and once per kept label (criterion set, that label's kind and
provenance). A count of the queue under any filter but "flagged" is then a sum of cells.
"""

from __future__ import annotations

from django.db import connection

from annotation.models import Sample

from ..models import CriterionLabel, Outcome, SampleReview
from ..review_cell_counts import KIND_BITS, PROVENANCE_BITS, Cell


def _literal(value: str) -> str:
    # Only the code's own choice values are written into the SQL, never input.
    assert value.replace("_", "").isalnum(), value
    return f"'{value}'"


def _cells_sql(one_sample: bool) -> str:
    label, sample = CriterionLabel._meta.db_table, Sample._meta.db_table
    review = SampleReview._meta.db_table
    kept = ", ".join(_literal(v) for v in KIND_BITS)
    unanimous = _literal(Outcome.KEPT_UNANIMOUS.value)
    kind_of = " ".join(f"WHEN {_literal(v)} THEN {bit}" for v, bit in KIND_BITS.items())
    provenance_of = " ".join(f"WHEN {_literal(v)} THEN {bit}" for v, bit in PROVENANCE_BITS.items())
    kinds = " + ".join(
        f"{bit} * MAX(CASE WHEN l.outcome = {_literal(v)} THEN 1 ELSE 0 END)"
        for v, bit in KIND_BITS.items()
    )
    provenances = " + ".join(
        f"{bit} * MAX(CASE WHEN l.outcome IN ({kept}) AND l.provenance = {_literal(v)} "
        "THEN 1 ELSE 0 END)"
        for v, bit in PROVENANCE_BITS.items()
    )
    return f"""
        WITH per AS (
            SELECT l.sample_id AS sample_id, {kinds} AS kinds, {provenances} AS provenances,
                   MAX(CASE WHEN l.outcome <> {unanimous} THEN 1 ELSE 0 END) AS disagreement
            FROM {label} l JOIN {sample} s ON s.id = l.sample_id
            WHERE s.project_id = %s AND s.split = %s AND s.is_seed = %s
                  {"AND s.id = %s" if one_sample else ""}
            GROUP BY l.sample_id
        ), members AS (
            SELECT per.*, CASE WHEN EXISTS (
                SELECT 1 FROM {review} r WHERE r.sample_id = per.sample_id
            ) THEN 1 ELSE 0 END AS reviewed
            FROM per WHERE per.kinds > 0
        )
        SELECT NULL, kinds, provenances, disagreement, reviewed, COUNT(*)
        FROM members GROUP BY kinds, provenances, disagreement, reviewed
        UNION ALL
        SELECT l.criterion_id, CASE l.outcome {kind_of} END, CASE l.provenance {provenance_of}
               ELSE 0 END, m.disagreement, m.reviewed, COUNT(*)
        FROM members m JOIN {label} l ON l.sample_id = m.sample_id AND l.outcome IN ({kept})
        GROUP BY l.criterion_id, 2, 3, m.disagreement, m.reviewed
    """


def review_cells_count(*, project_id: int, split: str, sample_id: int | None = None) -> list[Cell]:
    """Count the split's cells from its labels (or one sample's cells, each with n = 1)."""
    params: list[object] = [project_id, split, False]
    if sample_id is not None:
        params.append(sample_id)
    with connection.cursor() as cursor:
        cursor.execute(_cells_sql(sample_id is not None), params)
        rows = cursor.fetchall()
    return [Cell(c, k, p, bool(d), bool(r), n) for c, k, p, d, r, n in rows]
