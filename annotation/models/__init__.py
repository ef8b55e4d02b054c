from .choices import (
    ANNOTATOR_GROUP,
    LEAD_GROUP,
    Choice,
    PairType,
    RevisionWindow,
    Split,
    WorkOrder,
)
from .criteria_history import CriterionChange
from .job import Job
from .project import Criterion, Project, ProjectMember
from .sample import ReferenceLabel, Sample, SampleStatus
from .token import ApiToken
from .work import ProblemReport, Slot, Vote, VoteRevision

__all__ = [
    "ANNOTATOR_GROUP",
    "LEAD_GROUP",
    "ApiToken",
    "Choice",
    "Criterion",
    "CriterionChange",
    "Job",
    "PairType",
    "ProblemReport",
    "Project",
    "ProjectMember",
    "ReferenceLabel",
    "RevisionWindow",
    "Sample",
    "SampleStatus",
    "Slot",
    "Split",
    "Vote",
    "VoteRevision",
    "WorkOrder",
]
