from .choices import (
    Choice,
    LabelScale,
    PairType,
    RevisionWindow,
    RoutingPolicy,
    Split,
    WorkOrder,
)
from .criteria_history import CriterionChange
from .panel import PanelLabel
from .project import Criterion, Project, ProjectMember
from .sample import ReferenceLabel, Sample, SampleStatus
from .skip import Skip
from .work import ProblemReport, Slot, Vote, VoteRevision

__all__ = [
    "Choice",
    "Criterion",
    "CriterionChange",
    "LabelScale",
    "PairType",
    "PanelLabel",
    "ProblemReport",
    "Project",
    "ProjectMember",
    "ReferenceLabel",
    "RevisionWindow",
    "RoutingPolicy",
    "Sample",
    "SampleStatus",
    "Skip",
    "Slot",
    "Split",
    "Vote",
    "VoteRevision",
    "WorkOrder",
]
