"""Creating projects and their default criteria, and managing membership."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from core.permissions import ANNOTATOR_GROUP, LEAD_GROUP

from ..default_criteria import DEFAULT_CRITERIA, DEFAULT_RUBRIC
from ..models import Criterion, LabelScale, Project, ProjectMember


def roles_ensure() -> tuple[Group, Group]:
    """Create the ``lead`` and ``annotator`` groups if they are missing."""
    lead, _ = Group.objects.get_or_create(name=LEAD_GROUP)
    annotator, _ = Group.objects.get_or_create(name=ANNOTATOR_GROUP)
    return lead, annotator


@transaction.atomic
def project_create(*, name: str, slug: str | None = None, **settings: Any) -> Project:
    """Create a project with the default criteria of both splits (pointwise: default rubrics)."""
    scale = settings.get("label_scale", LabelScale.PAIRWISE)
    if scale not in LabelScale.values:
        raise ValidationError(
            {
                "label_scale": f"Unknown label scale {scale!r}: choose "
                f"{', '.join(LabelScale.values)}."
            }
        )
    project = Project.objects.create(name=name, slug=slug or slugify(name)[:80], **settings)
    criteria_ensure_defaults(project=project)
    return project


@transaction.atomic
def project_get_or_create(
    *, slug: str, name: str | None = None, label_scale: str | None = None
) -> tuple[Project, bool]:
    """Return the project with this slug, creating it (with default criteria) if needed.

    ``label_scale`` is the scale of a project created here; an existing project keeps its own.
    """
    project = Project.objects.filter(slug=slug).first()
    if project is not None:
        return project, False
    settings = {"label_scale": label_scale} if label_scale else {}
    return project_create(name=name or slug, slug=slug, **settings), True


def criteria_ensure_defaults(*, project: Project) -> int:
    """Add any default criterion the project lacks; existing ones are left as edited."""
    # Removed criteria count as present: a default the lead removed stays removed.
    existing = set(Criterion.all_objects.filter(project=project).values_list("split", "key"))
    order_by_split: dict[str, int] = {}
    created = []
    for spec in DEFAULT_CRITERIA:
        order = order_by_split.get(spec.split, 0) + 1
        order_by_split[spec.split] = order
        if (spec.split, spec.key) in existing:
            continue
        created.append(
            Criterion(
                project=project,
                split=spec.split,
                key=spec.key,
                name=spec.name,
                description=spec.description,
                order=order,
                rubric=dict(DEFAULT_RUBRIC),
            )
        )
    Criterion.objects.bulk_create(created)
    return len(created)


@transaction.atomic
def member_add(*, project: Project, user: Any) -> ProjectMember:
    """Add (or re-activate) an annotator in a project."""
    _, annotator_group = roles_ensure()
    user.groups.add(annotator_group)
    member, created = ProjectMember.objects.get_or_create(project=project, user=user)
    if not created and not member.is_active:
        member.is_active = True
        member.save(update_fields=["is_active"])
    return member
