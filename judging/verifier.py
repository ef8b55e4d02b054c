"""The verifier fallback of the published evaluation: a second model reads an unparsed output.

When the parser (``judging.parsing``) finds no verdict in a judge's output, the published
evaluation sends the output's last four lines to a small verifier model and reads its one-word
answer. :func:`verifier_prompt` builds that request's text from our own template
(``judging/prompts/verifier.txt``) and :func:`verifier_choice` reads the answer: the word is the
response's number (``1`` → Response 1, ``2`` → Response 2, read with ``int()`` so ``01`` and other
decimal digits count), tolerating surrounding quotes, stars and a full stop; an answer in the
judge's own form (``Response 2 is better.``) is read by the published rule. Anything else leaves
the row unparsed. Django-free.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

from judging.parsing import parse_judge_output

#: How many lines from the end of the output the verifier is shown.
VERIFIER_LINES = 4
TEMPLATE_PATH = Path(__file__).resolve().parent / "prompts" / "verifier.txt"
_WORD = re.compile(r"^[\s*_`'\"(\[]*(?:response\s*)?(\d+|none)[\s*_`'\".)\]]*$", re.I)


def last_lines(text: str, n: int = VERIFIER_LINES) -> str:
    """The last ``n`` lines of the stripped text (blank lines count)."""
    return "\n".join(text.strip().split("\n")[-n:])


def verifier_prompt(output: str) -> str:
    """The verifier's request text for one unparsed judge output."""
    template = Template(TEMPLATE_PATH.read_text(encoding="utf-8"))
    return template.substitute(judge_output=last_lines(output))


def verifier_choice(answer: str) -> str | None:
    """``model_a`` / ``model_b`` (in the terms the judge was shown: Response 1 / 2) or None."""
    match = _WORD.match(answer.strip())
    if match is None:
        return parse_judge_output(answer)
    word = match.group(1)
    if word.lower() == "none":
        return None
    number = int(word)
    return {1: "model_a", 2: "model_b"}.get(number)
