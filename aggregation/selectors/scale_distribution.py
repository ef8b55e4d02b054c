"""The dashboard's distribution of grades or scores per criterion (graded / pointwise projects)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count

from annotation import scales
from annotation.models import Criterion, LabelScale, Project, Vote


def scale_distribution(*, project: Project) -> dict[str, Any] | None:
    """Formal votes per grade (graded) or per score and response (pointwise), per criterion.

    None for a pairwise project. ``columns`` names the levels; each row has the criterion,
    its counts in column order and their total.
    """
    scale = project.label_scale
    if scale == LabelScale.PAIRWISE:
        return None
    votes = Vote.objects.filter(
        sample__project=project, sample__is_seed=False, round=Vote.FORMAL_ROUND
    ).order_by()
    criteria = list(Criterion.objects.filter(project=project).order_by("split", "order", "key"))
    if scale == LabelScale.GRADED:
        columns = [scales.GRADE_LABELS[g] for g in scales.GRADES]
        counts: dict[tuple[int, Any], int] = {
            (row["criterion_id"], row["grade"]): row["n"]
            for row in votes.filter(grade__isnull=False)
            .values("criterion_id", "grade")
            .annotate(n=Count("pk"))
        }
        levels: list[Any] = list(scales.GRADES)
    else:
        columns = [f"A {s}" for s in scales.SCORES] + [f"B {s}" for s in scales.SCORES]
        counts = {}
        for side in ("a", "b"):
            field = f"score_{side}"
            for row in (
                votes.filter(**{f"{field}__isnull": False})
                .values("criterion_id", field)
                .annotate(n=Count("pk"))
            ):
                counts[(row["criterion_id"], (side, row[field]))] = row["n"]
        levels = [("a", s) for s in scales.SCORES] + [("b", s) for s in scales.SCORES]
    rows = []
    for criterion in criteria:
        values = [counts.get((criterion.pk, level), 0) for level in levels]
        total = sum(values) if scale == LabelScale.GRADED else sum(values) // 2
        rows.append({"criterion": criterion, "counts": values, "total": total})
    return {"scale": scale, "columns": columns, "rows": [r for r in rows if r["total"]]}
