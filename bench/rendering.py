"""Time Markdown rendering of hostile and normal responses at 10 KB, 100 KB and 1 MB.

    .venv/bin/python bench/rendering.py [--sizes 10,100,1000] [--only NAME]

Each input is rendered once through ``annotation.rendering.render_markdown_uncached`` and
printed as milliseconds per KB beside two floors of the same length through the same function:
plain prose (words and spaces) and a normal model response (lists, a table, math, code, line
breaks). Linear rendering shows as ms/KB that stays flat as the size grows; the quadratic math
pre-pass this replaced grew tenfold per step. CPU time of this process is measured.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.rendering import render_markdown_uncached as render

PLAIN = "The photo shows a street market at dusk with three lamps above a stall of oranges. "
NORMAL = (
    "The image shows a **street market** at dusk.\n"
    "Objects in the image:\n- House: two storeys, red brick\n- Trees: 3\n\n"
    "| item | count |\n|---|---|\n| lamps | 3 |\n\n"
    "The area is $\\pi r^2$ and it costs $5 and $10.\n"
    "```python\nprint('x')\n```\n\n"
)
INPUTS = {
    "plain prose (floor)": PLAIN,
    "normal response": NORMAL,
    "\\[ unclosed": "\\[",
    "\\( unclosed": "\\(",
    "$ only": "$",
    "$$ lines": "$$\n",
    "$x$ pairs": "$x$ ",
    "backticks": "`",
    "[ only": "[",
    "![ only": "![",
    "[a]( only": "[a](",
    "fence lines": "```\n",
    "< a": "<a ",
    "emphasis *a_": "*a_",
    "table rows": "|a|\n|-|\n",
    "a + newline": "a\n",
}


def ms_per_kb(unit: str, kb: int) -> float:
    """Milliseconds of CPU per KB to render unit repeated to kb kilobytes."""
    size = kb * 1024
    text = (unit * (size // len(unit) + 1))[:size]
    start = time.process_time()
    render(text)
    return (time.process_time() - start) * 1000 / kb


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="sizes in KB, comma-separated")
    parser.add_argument("--only", default="", help="run only inputs whose name contains this")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'input':24}" + "".join(f"{str(kb) + ' KB':>12}" for kb in sizes) + "   (ms per KB)")
    for name, unit in INPUTS.items():
        if args.only and args.only not in name and "floor" not in name:
            continue
        row = [ms_per_kb(unit, kb) for kb in sizes]
        print(f"{name:24}" + "".join(f"{v:12.3f}" for v in row), flush=True)


if __name__ == "__main__":
    main()
