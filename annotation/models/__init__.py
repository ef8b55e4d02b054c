from .choices import (
    Choice,
    PairType,
    RevisionWindow,
    Split,
    WorkOrder,
)
from .criteria_history import CriterionChange
from .project import Criterion, Project, ProjectMember
from .sample import ReferenceLabel, Sample, SampleStatus
from .skip import Skip
from .work import ProblemReport, Slot, Vote, VoteRevision

__all__ = [
    "Choice",
    "Criterion",
    "CriterionChange",
    "PairType",
    "ProblemReport",
    "Project",
    "ProjectMember",
    "ReferenceLabel",
    "RevisionWindow",
    "Sample",
    "SampleStatus",
    "Skip",
    "Slot",
    "Split",
    "Vote",
    "VoteRevision",
    "WorkOrder",
]
