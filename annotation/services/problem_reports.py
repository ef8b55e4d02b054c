"""The lead's answer to a problem report: resolve, reassign the sample, or discard the sample."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..models import ProblemReport, Sample, SampleStatus, Slot
from .assignment import RELEASED, slot_reassign

Outcome = ProblemReport.Outcome


@transaction.atomic
def problem_report_close(
    *,
    report: ProblemReport,
    outcome: str,
    by: Any,
    note: str = "",
    to_annotator: Any | None = None,
) -> ProblemReport:
    """Close an open report with ``outcome``, recording who and when.

    * resolved: the report closes; the sample goes back to the reporter's queue (and everyone's).
    * reassigned: an open slot of the sample is given to ``to_annotator`` (a calibrated active
      annotator other than the reporter, who has not labeled it).
    * discarded: the sample is retired (it leaves every queue, the figures and exports); every
      open report on it closes the same way and its unfinished slots are released.

    Raises ValidationError when the report is already closed or the move is not possible.
    """
    report = (
        ProblemReport.objects.select_for_update(of=("self",))
        .select_related("sample", "resolved_by")
        .get(pk=report.pk)
    )
    if report.resolved_at is not None:
        who = report.resolved_by.get_username() if report.resolved_by else "someone"
        raise ValidationError(
            f"This report was already closed by {who} on "
            f"{timezone.localtime(report.resolved_at):%Y-%m-%d %H:%M}."
        )
    if outcome not in Outcome.values:
        raise ValidationError("Choose resolve, reassign or discard.")
    sample = report.sample
    closing = ProblemReport.objects.filter(pk=report.pk)
    if outcome == Outcome.REASSIGNED:
        if to_annotator is None:
            raise ValidationError("Choose the annotator who gets the sample.")
        if to_annotator.pk == report.reporter_id:
            raise ValidationError("Choose an annotator other than the one who reported it.")
        slot = (
            Slot.objects.filter(sample=sample, annotator__isnull=True, completed_at__isnull=True)
            .order_by("index")
            .first()
        )
        if slot is None:
            raise ValidationError(
                "This sample has no open slot to reassign"
                + (" (seed samples have none)." if sample.is_seed else ".")
            )
        slot_reassign(slot=slot, to_annotator=to_annotator, by=by)
    elif outcome == Outcome.DISCARDED:
        Sample.objects.filter(pk=sample.pk).update(status=SampleStatus.RETIRED)
        Slot.objects.filter(sample=sample, completed_at__isnull=True).update(**RELEASED)
        closing = ProblemReport.objects.filter(sample=sample, resolved_at__isnull=True)
    closing.update(
        outcome=outcome,
        resolved_at=timezone.now(),
        resolved_by=by,
        resolution=note.strip(),
        reassigned_to=to_annotator if outcome == Outcome.REASSIGNED else None,
    )
    report.refresh_from_db()
    return report
