"""The default evaluation criteria of both splits, in the platform's own words.

Each description says what the criterion is about, what to reward and what to penalize; the lead
can edit them per project.
"""

from __future__ import annotations

from dataclasses import dataclass

#: What each pointwise score means unless the lead writes a criterion's own rubric.
DEFAULT_RUBRIC: dict[str, str] = {
    "1": "Fails the criterion: wrong, missing or unusable on this aspect.",
    "2": "Weak: more problems than strengths on this aspect.",
    "3": "Acceptable: meets the criterion with clear gaps.",
    "4": "Good: meets the criterion with minor gaps.",
    "5": "Excellent: fully meets the criterion; nothing to improve on this aspect.",
}


@dataclass(frozen=True)
class CriterionSpec:
    split: str
    key: str
    name: str
    description: str


OPEN_ENDED: tuple[CriterionSpec, ...] = (
    CriterionSpec(
        "open_ended",
        "completeness",
        "Completeness & Coverage",
        "Does the response address everything the question asks, and cover the image's important "
        "content?\n\n**Reward:** answering every part of the request; covering the main subjects, "
        "their relations and the context a reader needs.\n\n**Penalize:** skipped sub-questions, "
        "ignoring large or salient parts of the image, stopping halfway.",
    ),
    CriterionSpec(
        "open_ended",
        "visual-grounding",
        "Visual Grounding & Details",
        "Are the statements tied to what is actually visible, with specific, checkable details?"
        "\n\n**Reward:** precise attributes (colours, counts, positions, text in the image) that "
        "match the picture; references a reader could point to.\n\n**Penalize:** generic "
        "statements that would fit any image; vague or wrong spatial relations.",
    ),
    CriterionSpec(
        "open_ended",
        "hallucination",
        "Factuality / No Hallucination",
        "Is everything the response asserts true of the image and of the world?\n\n**Reward:** "
        "claims that are all supported; hedging where the image is ambiguous.\n\n**Penalize:** "
        "objects, text, numbers or events that are not there; false world knowledge. One "
        "confident invention weighs more than a missing detail.",
    ),
    CriterionSpec(
        "open_ended",
        "expressiveness",
        "Expressiveness & Expertise",
        "Does the response bring insight, domain knowledge or a vivid, well-chosen way of "
        "saying things?\n\n**Reward:** expert vocabulary used correctly, apt interpretation, "
        "creative or engaging wording where the task invites it.\n\n**Penalize:** flat, "
        "boilerplate prose; forced flourishes that add nothing.",
    ),
    CriterionSpec(
        "open_ended",
        "clarity",
        "Clarity & Coherence",
        "Is the response easy to follow from start to end?\n\n**Reward:** a logical order, "
        "clear structure (paragraphs, lists where useful), consistent terminology.\n\n"
        "**Penalize:** repetition, contradictions between parts, rambling, confusing formatting.",
    ),
)

REASONING: tuple[CriterionSpec, ...] = (
    CriterionSpec(
        "reasoning",
        "grounding",
        "Visual Grounding",
        "Does the reasoning read the figure correctly and use what it shows?\n\n**Reward:** "
        "correctly extracted values, labels, shapes and relations from the image, stated before "
        "they are used.\n\n**Penalize:** misread numbers or diagrams; solving a different problem "
        "than the one pictured; ignoring the image.",
    ),
    CriterionSpec(
        "reasoning",
        "logic",
        "Logical Coherence & Consistency",
        "Does each step follow from the previous ones?\n\n**Reward:** valid inferences, correct "
        "algebra, conclusions consistent with the steps.\n\n**Penalize:** unjustified jumps, "
        "circular arguments, a final answer that contradicts the working.",
    ),
    CriterionSpec(
        "reasoning",
        "hallucination",
        "Factual Correctness / No Hallucination",
        "Are the facts, formulas and intermediate results correct?\n\n**Reward:** correct "
        "theorems and definitions, accurate arithmetic.\n\n**Penalize:** invented formulas or "
        "properties, wrong computations, facts not given in the problem presented as given.",
    ),
    CriterionSpec(
        "reasoning",
        "exploration",
        "Reflection & Exploration",
        "Does the response check itself and consider alternatives when it matters?\n\n"
        "**Reward:** verifying a result, noticing and repairing a mistake, weighing more than "
        "one approach on a hard step.\n\n**Penalize:** never checking a doubtful step; "
        "reflection that is only ritual and changes nothing.",
    ),
    CriterionSpec(
        "reasoning",
        "efficiency",
        "Conciseness & Efficiency",
        "Does the response reach the answer without wasted effort?\n\n**Reward:** a direct "
        "path, only the steps that are needed, a clearly stated final answer.\n\n**Penalize:** "
        "padding, needless repetition, long detours that do not serve the solution.",
    ),
)

DEFAULT_CRITERIA: tuple[CriterionSpec, ...] = OPEN_ENDED + REASONING
