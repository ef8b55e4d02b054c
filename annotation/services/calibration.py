"""The lead's calibration decisions and reference labels for seed items."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.selectors.calibration import calibration_discussion

from ..models import Criterion, Project, ProjectMember, ReferenceLabel, Sample


@transaction.atomic
def calibration_mark(*, project: Project, member: ProjectMember, by: Any) -> ProjectMember:
    """Let the annotator start formal work (the gate opens)."""
    if member.project_id != project.pk:
        raise ValueError("This member belongs to another project.")
    now = timezone.now()
    ProjectMember.objects.filter(pk=member.pk).update(calibrated_at=now, calibrated_by=by)
    member.refresh_from_db()
    return member


class NeedsConfirmation(Exception):
    """Marking calibrated below the project's threshold needs the lead's explicit confirmation."""


def calibration_mark_checked(
    *, project: Project, member: ProjectMember, by: Any, confirmed: bool
) -> ProjectMember:
    """Mark calibrated, after a confirmation when agreement is below the project's threshold.

    Agreement is the discussion's: latest calibration votes against the reference labels.
    Raises NeedsConfirmation, whose message gives the agreement beside the threshold.
    """
    summary = next(
        (m for m in calibration_discussion(project=project).members if m.member.pk == member.pk),
        None,
    )
    if summary is not None and summary.below_threshold and not confirmed:
        if summary.compared:
            agreement = (
                f"agrees with the reference on {summary.percent}% "
                f"({summary.agree} of {summary.compared} items)"
            )
        else:
            agreement = "has no vote on a seed item with a reference label"
        raise NeedsConfirmation(
            f"{member.user.get_username()} {agreement}, below the project's threshold of "
            f"{project.calibration_threshold}%. Tick the confirmation to mark them calibrated "
            "anyway."
        )
    return calibration_mark(project=project, member=member, by=by)


@transaction.atomic
def calibration_new_round(*, project: Project, member: ProjectMember, by: Any) -> ProjectMember:
    """Send the annotator through the seed items again; earlier rounds' votes are kept."""
    if member.project_id != project.pk:
        raise ValueError("This member belongs to another project.")
    ProjectMember.objects.filter(pk=member.pk).update(
        calibration_round=F("calibration_round") + 1, calibrated_at=None, calibrated_by=None
    )
    member.refresh_from_db()
    return member


@transaction.atomic
def reference_label_set(
    *, sample: Sample, criterion: Criterion, preference: str, by: Any, note: str | None = None
) -> ReferenceLabel:
    """Set the lead's expected preference for a (sample, criterion)."""
    if criterion.project_id != sample.project_id or criterion.split != sample.split:
        raise ValueError("The criterion does not apply to this sample.")
    defaults: dict[str, Any] = {
        "preference": preference,
        "source": ReferenceLabel.Source.LEAD,
        "set_by": by if getattr(by, "is_authenticated", False) else None,
    }
    if note is not None:
        defaults["note"] = note
    label, _ = ReferenceLabel.objects.update_or_create(
        sample=sample, criterion=criterion, defaults=defaults
    )
    return label
