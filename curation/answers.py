"""The answer extractor of the correctness filter: a response's final answer against a reference.

Pure Python, no Django. :func:`extract_answer` finds the final answer of a response (the last
``\\boxed{...}``, else the last "answer is ..." / "Answer: ...", else the last line);
:func:`answers_match` compares it with the reference answer:

- a choice letter (``B``, ``(B)``, ``B.``, ``Option B``) matches the same letter;
- a number matches within a tolerance: integers, decimals, thousands separators, fractions
  (``3/4``, ``\\frac{3}{4}``), percentages, simple expressions (``2\\sqrt{3}``, ``\\pi/2``,
  ``2^{10}``) and a trailing unit (``12 cm``, ``45^\\circ``) are all read as numbers; a decimal
  answer given to 2 or more places also matches the reference rounded to those places
  (``0.33`` for ``1/3``);
- anything else matches when equal after lowercasing and removing punctuation and spaces.

When no answer can be found, the response counts as wrong (``extracted`` is None).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass

REL_TOL = 1e-3
ABS_TOL = 1e-9

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER = re.compile(r"answer\s*(?:is\s*:?|:|=)\s*(.+)", re.IGNORECASE)
_CHOICE = re.compile(
    r"^\s*(?:option|choice)?\s*[\(\[]?\s*([A-Ha-h])\s*[\)\]\.:]?\s*(?:$|[\)\.:]|\s)", re.IGNORECASE
)
_CHOICE_ONLY = re.compile(r"^\s*(?:option|choice)?\s*[\(\[]?\s*([A-H])\s*[\)\]\.:]?\s*$")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_FRAC_SHORT = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")
_SQRT = re.compile(r"\\sqrt\s*\{([^{}]*)\}")
_SQRT_SHORT = re.compile(r"\\sqrt\s*(\d+)")
_TEXT_CMD = re.compile(r"\\(?:text|mathrm|mbox|textbf|mathbf|operatorname)\s*\{([^{}]*)\}")
_UNIT_WORD = re.compile(r"(?<![A-Za-z])(?!pi\b|sqrt\b)[A-Za-zµ]+(?:\s*\^\s*\{?\d+\}?)?")
_IMPLICIT = re.compile(r"(\d|\))\s*(?=pi\b|sqrt\b|\()")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?")


@dataclass(frozen=True)
class AnswerCheck:
    """A response's final answer as read, and whether it matches the reference."""

    correct: bool
    extracted: str | None


def _boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}``, braces balanced."""
    found = None
    for match in _BOXED.finditer(text):
        depth, start = 1, match.end()
        for pos in range(start, len(text)):
            if text[pos] == "{":
                depth += 1
            elif text[pos] == "}":
                depth -= 1
                if depth == 0:
                    found = text[start:pos]
                    break
    return found


def _clean(text: str) -> str:
    text = text.strip().replace("**", "").replace("__", "")
    text = text.strip().strip("$").strip()
    return re.sub(r"[\s.;,]+$", "", text)


def extract_answer(text: str) -> str | None:
    """The final answer stated in ``text``, or None when it states none."""
    if not text or not text.strip():
        return None
    boxed = _boxed(text)
    if boxed is not None:
        return _clean(boxed)
    found = None
    for line in text.splitlines():
        for match in _ANSWER.finditer(line):
            found = match.group(1)
    if found is not None and _clean(found):
        return _clean(found)
    lines = [line for line in text.splitlines() if line.strip()]
    return _clean(lines[-1]) if lines else None


def _choice(text: str, *, strict: bool) -> str | None:
    pattern = _CHOICE_ONLY if strict else _CHOICE
    match = pattern.match(_clean(text))
    return match.group(1).upper() if match else None


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == "pi":
        return math.pi
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return float(_OPS[type(node.op)](left, right))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "sqrt"
        and len(node.args) == 1
    ):
        return math.sqrt(_eval(node.args[0]))
    raise ValueError("not a simple expression")


def number_value(text: str) -> float | None:
    """``text`` read as a number or a simple expression with an optional unit, else None."""
    s = _clean(text)
    if not s or len(s) > 200:
        return None
    if "=" in s:
        s = s.rsplit("=", 1)[1]
    percent = "%" in s or "\\%" in s
    s = _TEXT_CMD.sub(r" \1 ", s)
    for old, new in (
        ("\\left", ""),
        ("\\right", ""),
        ("\\!", ""),
        ("\\,", ""),
        ("\\;", ""),
        ("\\%", ""),
        ("%", ""),
        ("^\\circ", ""),
        ("^{\\circ}", ""),
        ("°", ""),
        ("\\cdot", "*"),
        ("\\times", "*"),
        ("\\pi", " pi "),
        ("π", " pi "),
        ("−", "-"),
    ):
        s = s.replace(old, new)
    s = _THOUSANDS.sub("", s)
    for _ in range(3):  # nested fractions and roots, innermost first
        s = _FRAC.sub(r"((\1)/(\2))", s)
        s = _SQRT.sub(r"sqrt(\1)", s)
    s = _FRAC_SHORT.sub(r"((\1)/(\2))", s)
    s = _SQRT_SHORT.sub(r"sqrt(\1)", s)
    s = _UNIT_WORD.sub(" ", s.replace("\\sqrt", "sqrt")).strip()
    s = s.replace("{", "(").replace("}", ")").replace("^", "**")
    s = _IMPLICIT.sub(r"\1*", s)
    s = re.sub(r"\s+", "", s)
    if not s or not re.search(r"\d|pi", s):
        return None
    try:
        value = _eval(ast.parse(s, mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    if not math.isfinite(value):
        return None
    return value / 100 if percent else value


def _decimals(text: str) -> int:
    match = re.fullmatch(r"\s*-?\d+\.(\d+)\s*", _clean(text))
    return len(match.group(1)) if match else 0


def _words(text: str) -> str:
    text = _TEXT_CMD.sub(r"\1", _clean(text)).lower()
    return re.sub(r"[^\w]+", "", text)


def answers_match(answer: str, reference: str, *, rel_tol: float = REL_TOL) -> bool:
    """True when the extracted ``answer`` states the ``reference`` answer (see the module)."""
    ref_choice = _choice(reference, strict=True)
    if ref_choice is not None:
        return _choice(answer, strict=False) == ref_choice
    ref_value = number_value(reference)
    if ref_value is not None:
        value = number_value(answer)
        if value is None and "%" in reference:
            value = number_value(answer + "%")
        if value is None:
            return False
        if "%" in reference and "%" not in answer and not math.isclose(value, ref_value):
            value = value / 100  # "50" answering "50%"
        if math.isclose(value, ref_value, rel_tol=rel_tol, abs_tol=ABS_TOL):
            return True
        places = _decimals(answer)
        return places >= 2 and round(ref_value, places) == round(value, places)
    return bool(_words(reference)) and _words(answer) == _words(reference)


def answer_check(text: str, reference: str) -> AnswerCheck:
    """Extract the final answer of ``text`` and compare it with ``reference``."""
    extracted = extract_answer(text)
    if extracted is None:
        return AnswerCheck(False, None)
    if answers_match(extracted, reference):
        return AnswerCheck(True, extracted)
    # "... so x = 12." on the last line: the last number of the answer counts too.
    if number_value(reference) is not None and _choice(reference, strict=True) is None:
        numbers = _NUMBER.findall(extracted.replace(",", ""))
        if numbers and answers_match(numbers[-1], reference):
            return AnswerCheck(True, numbers[-1])
    return AnswerCheck(False, extracted)
