from .choices import (
    ANNOTATOR_GROUP,
    LEAD_GROUP,
    Choice,
    PairType,
    RevisionWindow,
    Split,
    WorkOrder,
)
from .job import Job
from .project import Criterion, Project, ProjectMember
from .sample import ReferenceLabel, Sample, SampleStatus
from .skip import Skip
from .token import ApiToken
from .work import ProblemReport, Slot, Vote, VoteRevision

__all__ = [
    "ANNOTATOR_GROUP",
    "LEAD_GROUP",
    "ApiToken",
    "Choice",
    "Criterion",
    "Job",
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
