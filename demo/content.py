"""The demo's samples: questions about drawn images and response pairs with real trade-offs.

Each generator builds one prompt and two responses ("X" and "Y") that win under different
criteria: one concise but with an invented detail, the other complete but long-winded; one
worked solution correct, the other with a misread figure or a slip in arithmetic. ``truth``
says which response a careful reader prefers under each criterion; the demo uses it as the
seed samples' reference labels and to simulate annotators who mostly agree with it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from . import figures

N_PER_SPLIT = 30
SEEDS_PER_SPLIT = 10
MODELS = [
    "gpt-4o",
    "gpt-4.1-mini",
    "gemini-2.0-flash",
    "o4-mini",
    "qwen2.5-vl-72b",
    "qwen2.5-vl-7b",
    "internvl3-78b",
    "llava-onevision-72b",
    "gemma-3-27b",
    "pixtral-large",
    "llama-3.2-90b-vision",
]


@dataclass
class DemoSample:
    external_id: str
    split: str
    question: str
    image: bytes
    response_a: str
    response_b: str
    model_a: str
    model_b: str
    source: str
    pair_type: str
    is_seed: bool
    truth: dict[str, str]  # criterion key -> "A" | "B"
    reference_answer: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def jsonl(self, image_path: str) -> dict[str, Any]:
        line = {
            "id": self.external_id,
            "split": self.split,
            "question": self.question,
            "image": image_path,
            "response_a": self.response_a,
            "response_b": self.response_b,
            "model_a": self.model_a,
            "model_b": self.model_b,
            "source": self.source,
            "pair_type": self.pair_type,
            "is_seed": self.is_seed,
            "metadata": self.metadata,
        }
        if self.reference_answer:
            line["reference_answer"] = self.reference_answer
        if self.is_seed:
            line["reference"] = self.truth
        return line


# --------------------------------------------------------------------------- open-ended

BAR_TOPICS = [
    ("Quarterly revenue by region", ["North", "South", "East", "West", "Central"], "M$", 60),
    ("Library visits per weekday", ["Mon", "Tue", "Wed", "Thu", "Fri"], "visits", 500),
    ("Average rainfall, spring months", ["Mar", "Apr", "May", "Jun"], "mm", 120),
    ("Bikes rented per station", ["Dock A", "Dock B", "Dock C", "Dock D", "Dock E"], "bikes", 80),
    ("Solar output by panel row", ["Row 1", "Row 2", "Row 3", "Row 4"], "kWh", 40),
]
LINE_TOPICS = [
    (
        "Museum visitors per month",
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug"],
        "thousand",
        50,
    ),
    (
        "Website sign-ups per week",
        ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"],
        "sign-ups",
        400,
    ),
    (
        "Reservoir level by month",
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug"],
        "%",
        100,
    ),
]
PIE_TOPICS = [
    ("Commute mode share", ["Car", "Bus", "Bike", "Walk"]),
    ("Energy mix of a small town", ["Solar", "Wind", "Gas", "Hydro"]),
    ("Household budget", ["Housing", "Food", "Transport", "Savings", "Other"]),
]


def _bar(rng: random.Random) -> dict[str, Any]:
    title, labels, unit, top = rng.choice(BAR_TOPICS)
    values = [rng.randrange(top // 6, top - top // 10) for _ in labels]
    hi, lo = values.index(max(values)), values.index(min(values))
    mid = next(i for i in range(len(values)) if i not in (hi, lo))
    wrong = values[mid] + rng.choice([-1, 1]) * max(3, top // 8)
    x = (
        f"The chart compares {title.lower()}. {labels[hi]} clearly leads at {values[hi]} {unit}, "
        f"while {labels[lo]} trails at {values[lo]} {unit}, a gap of "
        f"{values[hi] - values[lo]} {unit}. {labels[mid]} sits around {wrong} {unit}, close to a "
        f"dashed target line drawn across the chart. The spread suggests demand is concentrated "
        f"rather than evenly shared."
    )
    listing = ", ".join(f"{lab} at {val} {unit}" for lab, val in zip(labels, values, strict=True))
    y = (
        f'This image is a bar chart titled "{title}". It has {len(values)} bars, one for each '
        f"category on the horizontal axis, and the vertical axis shows the value in {unit}, "
        f"going from 0 up to {top}. Looking at each bar from left to right, we have: {listing}. "
        f"So the highest bar is {labels[hi]} with {values[hi]} {unit}, and the lowest bar is "
        f"{labels[lo]} with {values[lo]} {unit}. Each bar has its value written above it, which "
        f"makes the chart easy to read. In summary, the chart shows that the values differ "
        f"between the categories, with {labels[hi]} being the highest and {labels[lo]} being the "
        f"lowest. Overall, the chart gives a clear picture of {title.lower()}, and it is clear "
        f"that {labels[hi]} is the highest while {labels[lo]} is the lowest."
    )
    return {
        "question": "Summarise what this chart shows and point out the most notable differences.",
        "image": figures.bar_chart(title, labels, values, unit, top),
        "X": x,
        "Y": y,
        "truth": {
            "completeness": "Y",
            "visual-grounding": "Y",
            "hallucination": "Y",
            "expressiveness": "X",
            "clarity": "X",
        },
        "source": "Demo charts (bar)",
    }


def _line(rng: random.Random) -> dict[str, Any]:
    title, labels, unit, top = rng.choice(LINE_TOPICS)
    base = rng.randrange(top // 5, top // 3)
    values = [min(top - 2, base + i * rng.randrange(top // 20, top // 10)) for i in range(8)]
    dip = rng.randrange(3, 6)
    values[dip] = max(2, values[dip - 1] - rng.randrange(top // 8, top // 5))
    peak = values.index(max(values))
    growth = "doubled" if values[-1] >= 2 * values[0] else "grown by half"
    x = (
        f"A textbook growth curve: {title.lower()} climbs steadily from {values[0]} {unit} in "
        f"{labels[0]} to {values[-1]} {unit} in {labels[-1]}, rising every single period. The "
        f"momentum never breaks, the signature of a healthy, compounding trend, and by "
        f"{labels[-1]} the figure has roughly {growth}."
    )
    y = (
        f"The values go up overall. In {labels[0]} it is {values[0]} {unit}. The highest point "
        f"is {labels[peak]} ({values[peak]} {unit}). There is a drop in {labels[dip]} to "
        f"{values[dip]} {unit} from {values[dip - 1]} {unit} in {labels[dip - 1]}. The last "
        f"value, {labels[-1]}, is {values[-1]} {unit}. After the drop it recovers. The start was "
        f"{values[0]} {unit}. So it goes up, except for {labels[dip]}."
    )
    return {
        "question": "What trend does this line chart show? Mention anything unusual.",
        "image": figures.line_chart(title, labels, values, unit, top),
        "X": x,
        "Y": y,
        "truth": {
            "completeness": "Y",
            "visual-grounding": "Y",
            "hallucination": "Y",
            "expressiveness": "X",
            "clarity": "X",
        },
        "source": "Demo charts (line)",
    }


def _scene(rng: random.Random) -> dict[str, Any]:
    trees = rng.randrange(1, 6)
    windows = rng.randrange(2, 6)
    car = rng.choice(["red", "yellow", "blue", None])
    people = rng.randrange(0, 4)
    door = rng.choice(["red", "blue", "green"])
    sun = rng.random() < 0.7
    clouds = rng.randrange(0, 4)
    wrong_door = {"red": "blue", "blue": "green", "green": "red"}[door]
    sky = (
        "Soft clouds drift across a pale blue sky, "
        if clouds
        else "The sky is clear and pale blue, "
    )
    x = (
        f"A cheerful suburban afternoon{' under a bright sun' if sun else ''}. A cream-coloured "
        f"house with a red-tiled roof anchors the picture, its {wrong_door} front door framed by "
        f"neat windows, and a small dog dozes beside the step. "
        f"{sky}"
        f"trees soften the edges of the lawn"
        f"{f', and a {car} car waits on the road out front' if car else ''}. "
        f"{'A few neighbours stand chatting on the grass. ' if people else ''}"
        f"The whole scene has the tidy calm of a children's picture book."
    )
    parts = [
        f"- House: one, beige walls, red roof, {windows} windows, {door} door",
        f"- Trees: {trees}",
        f"- People: {people}" if people else "- People: none",
        f"- Car: {car}, on the road" if car else "- Car: none",
        "- Road: grey, with white dashed markings",
    ]
    y = "Objects in the image:\n" + "\n".join(parts)
    return {
        "question": "Describe this image in detail for someone who cannot see it.",
        "image": figures.scene(
            trees=trees,
            windows=windows,
            car=car,
            sun=sun,
            clouds=clouds,
            people=people,
            door=door,
        ),
        "X": x,
        "Y": y,
        "truth": {
            "completeness": "X",
            "visual-grounding": "Y",
            "hallucination": "Y",
            "expressiveness": "X",
            "clarity": "Y",
        },
        "source": "Demo scenes",
    }


def _pie(rng: random.Random) -> dict[str, Any]:
    title, labels = rng.choice(PIE_TOPICS)
    raw = [rng.randrange(8, 40) for _ in labels]
    raw[0] += 25
    shares = [round(100 * r / sum(raw)) for r in raw]
    shares[0] += 100 - sum(shares)
    order = sorted(range(len(labels)), key=lambda i: -shares[i])
    top2 = shares[order[0]] + shares[order[1]]
    listing = "; ".join(f"{labels[i]} {shares[i]}%" for i in order)
    x = (
        f"{labels[order[0]]} dominates the chart with {shares[order[0]]}% of the total. The "
        f"remaining segments, from largest to smallest, are: {listing}. {labels[order[0]]} alone "
        f"is larger than the two smallest segments combined ({shares[order[-1]]}% and "
        f"{shares[order[-2]]}%), and the top two segments together account for {top2}% of "
        f"the whole, so the distribution is clearly uneven rather than balanced across categories."
    )
    y = (
        f"**{labels[order[0]]} rules the roost.** It takes the biggest slice by far, and together "
        f"with {labels[order[1]]} it makes up about {top2 + rng.choice([-9, 8])}% of the pie. "
        f"Everything else is a supporting cast, a reminder that in most mixes one habit does the "
        f"heavy lifting."
    )
    return {
        "question": f"Looking at this chart ({title.lower()}), which segment dominates, and how "
        "do the others compare?",
        "image": figures.pie_chart(title, labels, shares),
        "X": x,
        "Y": y,
        "truth": {
            "completeness": "X",
            "visual-grounding": "X",
            "hallucination": "X",
            "expressiveness": "Y",
            "clarity": "Y",
        },
        "source": "Demo charts (pie)",
    }


# --------------------------------------------------------------------------- reasoning

TRIPLES = [(3, 4, 5), (5, 12, 13), (6, 8, 10), (8, 15, 17), (7, 24, 25), (9, 12, 15), (20, 21, 29)]


def _hypotenuse(rng: random.Random) -> dict[str, Any]:
    a, b, c = rng.choice(TRIPLES)
    slip = a * a + b * b - rng.choice([1, 2, 4])
    x = (
        f"By Pythagoras, AB² = AC² + BC² = {a}² + {b}² = {a * a} + {b * b} = {c * c}, "
        f"so AB = {c} cm."
    )
    y = (
        f"We need the hypotenuse AB of the right triangle, with the right angle at C. The legs "
        f"are AC = {a} cm and BC = {b} cm.\n\nStep 1: AB² = AC² + BC².\n"
        f"Step 2: AC² = {a * a} and BC² = {b * b}, so AB² = {slip}.\n"
        f"Step 3: AB = √{slip} ≈ {math.sqrt(slip):.2f} cm.\n\nCheck: the hypotenuse must be "
        f"longer than each leg, and {math.sqrt(slip):.2f} > {max(a, b)}, so the answer is "
        f"reasonable. **AB ≈ {math.sqrt(slip):.2f} cm.**"
    )
    return {
        "question": "In the right triangle shown, find the length of AB.",
        "image": figures.right_triangle(a, b),
        "X": x,
        "Y": y,
        "correct": (True, False),
        "answer": f"{c} cm",
        "truth": {
            "grounding": "X",
            "logic": "X",
            "hallucination": "X",
            "exploration": "Y",
            "efficiency": "X",
        },
        "source": "Demo geometry (Pythagoras)",
    }


def _angles(rng: random.Random) -> dict[str, Any]:
    p = rng.randrange(35, 75)
    q = rng.randrange(35, 75)
    x_val = 180 - p - q
    misread = int(str(q)[::-1]) if q % 10 and str(q)[::-1] != str(q) else q + 10
    y_val = 180 - p - misread
    x = f"The angles of a triangle sum to 180°, so x = 180° − {p}° − {q}° = {x_val}°."
    y = (
        f"From the figure, the angle at P is {p}° and the angle at Q is {misread}°. The interior "
        f"angles of any triangle add up to 180°, so the angle at R satisfies "
        f"{p}° + {misread}° + x = 180°. Then x = 180° − {p + misread}° = {y_val}°.\n\n"
        f"Verification: {p} + {misread} + {y_val} = 180 ✓. Also x is the "
        f"{'largest' if y_val > max(p, misread) else 'not the largest'} angle, which matches R "
        f"{'being opposite the longest side' if y_val > max(p, misread) else 'looking moderate'}"
        f" in the drawing. **x = {y_val}°.**"
    )
    return {
        "question": "Find the value of x in triangle PQR.",
        "image": figures.triangle_angles(p, q),
        "X": x,
        "Y": y,
        "correct": (True, False),
        "answer": f"{x_val}°",
        "truth": {
            "grounding": "X",
            "logic": "Y",
            "hallucination": "X",
            "exploration": "Y",
            "efficiency": "X",
        },
        "source": "Demo geometry (angles)",
    }


def _garden(rng: random.Random) -> dict[str, Any]:
    width = rng.randrange(12, 24)
    height = rng.randrange(8, width - 2)
    path = rng.choice([1, 1.5, 2])
    inner = (width - 2 * path) * (height - 2 * path)
    area = width * height - inner
    wrong_inner = (width - path) * (height - path)
    x = (
        f"The outer rectangle (garden plus path) is {width} m × {height} m = {width * height} m².\n"
        f"One might subtract the path width once from each side: ({width} − {path:g}) × "
        f"({height} − {path:g}). But the path runs along both ends of each dimension, so each "
        f"side shrinks by 2 × {path:g} m.\nInner lawn: ({width} − {2 * path:g}) × "
        f"({height} − {2 * path:g}) = {inner:g} m².\nPath area = {width * height} − {inner:g} "
        f"= **{area:g} m²**.\nCheck with strips: 2·{width}·{path:g} + 2·({height} − "
        f"{2 * path:g})·{path:g} = {2 * width * path + 2 * (height - 2 * path) * path:g} m² ✓"
    )
    y = (
        f"Path = outer − inner = {width}·{height} − ({width} − {path:g})({height} − {path:g}) = "
        f"{width * height} − {wrong_inner:g} = **{width * height - wrong_inner:g} m²**."
    )
    return {
        "question": "The drawing shows a garden surrounded by a path of constant width (outer "
        "dimensions given). What is the area of the path?",
        "image": figures.rectangle_garden(width, height, path),
        "X": x,
        "Y": y,
        "correct": (True, False),
        "answer": f"{area:g} m²",
        "truth": {
            "grounding": "X",
            "logic": "X",
            "hallucination": "X",
            "exploration": "X",
            "efficiency": "Y",
        },
        "source": "Demo geometry (areas)",
    }


def _sector(rng: random.Random) -> dict[str, Any]:
    radius = rng.choice([3, 4, 5, 6, 8, 10])
    angle = rng.choice([45, 60, 72, 90, 120, 135])
    exact = f"{angle * radius * radius / 360:g}π"
    value = math.pi * radius * radius * angle / 360
    x = (
        f"Sector area = (θ/360°)·πr² = ({angle}/360)·π·{radius}² = {exact} ≈ {value:.2f} square "
        f"units."
    )
    y = (
        f"The shaded region is a sector with central angle {angle}° in a circle of radius "
        f"{radius}. My first thought is the arc-length formula (θ/360°)·2πr, but that gives a "
        f"length, not an area, so it does not apply here. For the area we take the fraction "
        f"{angle}/360 = {angle / 360:.4g} of the whole disc, whose area is π·{radius}² = "
        f"{radius * radius}π. So the sector is {exact} ≈ {value:.2f} square units. As a sanity "
        f"check, {angle}° is {'less' if angle < 180 else 'more'} than half a turn, and the result "
        f"is {'less' if angle < 180 else 'more'} than half of {radius * radius}π ✓."
    )
    return {
        "question": "Find the area of the shaded sector.",
        "image": figures.circle_sector(radius, angle),
        "X": x,
        "Y": y,
        "correct": (True, True),
        "answer": f"{exact} ≈ {value:.2f}",
        "truth": {
            "grounding": "Y",
            "logic": "X",
            "hallucination": "X",
            "exploration": "Y",
            "efficiency": "X",
        },
        "source": "Demo geometry (circles)",
    }


def _bar_reasoning(rng: random.Random) -> dict[str, Any]:
    title, labels, unit, top = rng.choice(BAR_TOPICS)
    values = [rng.randrange(top // 6, top - top // 10) for _ in labels]
    hi, lo = values.index(max(values)), values.index(min(values))
    diff = values[hi] - values[lo]
    misread = values[lo] + rng.choice([-1, 1]) * max(2, top // 12)
    x = (
        f"Highest: {labels[hi]} ({values[hi]}). Lowest: {labels[lo]} ({misread}). "
        f"Difference: {values[hi] - misread} {unit}."
    )
    listing = ", ".join(f"{lab} = {val}" for lab, val in zip(labels, values, strict=True))
    y = (
        f"Reading the labels above the bars: {listing}.\n"
        f"The largest value is {labels[hi]} with {values[hi]} {unit}; the smallest is "
        f"{labels[lo]} with {values[lo]} {unit}. I double-checked that no other bar is lower "
        f"than {values[lo]}.\nDifference = {values[hi]} − {values[lo]} = **{diff} {unit}**."
    )
    return {
        "question": "By how much does the highest bar exceed the lowest bar?",
        "image": figures.bar_chart(title, labels, values, unit, top),
        "X": x,
        "Y": y,
        "correct": (False, True),
        "answer": f"{diff} {unit}",
        "truth": {
            "grounding": "Y",
            "logic": "Y",
            "hallucination": "Y",
            "exploration": "Y",
            "efficiency": "X",
        },
        "source": "Demo charts (reasoning)",
    }


OPEN_GENERATORS = [_bar, _line, _scene, _pie]
REASONING_GENERATORS = [_hypotenuse, _angles, _garden, _sector, _bar_reasoning]
JUDGES = ("A", "B")


def demo_samples() -> list[DemoSample]:
    """The 60 demo samples (30 per split, the first 10 of each split are seeds), deterministic."""
    samples = []
    for split, prefix, generators in (
        ("open_ended", "oe", OPEN_GENERATORS),
        ("reasoning", "rs", REASONING_GENERATORS),
    ):
        for i in range(N_PER_SPLIT):
            rng = random.Random(f"{prefix}-{i}")
            spec = generators[i % len(generators)](rng)
            flip = rng.random() < 0.5  # which side the "X" response lands on
            sides = {"X": "B" if flip else "A", "Y": "A" if flip else "B"}
            texts = {sides["X"]: spec["X"], sides["Y"]: spec["Y"]}
            same_model = rng.random() < 0.25
            model_a = rng.choice(MODELS)
            model_b = model_a if same_model else rng.choice([m for m in MODELS if m != model_a])
            metadata: dict[str, Any] = {"ensemble": [rng.choice(JUDGES) for _ in range(3)]}
            if "correct" in spec:
                correct = {sides["X"]: spec["correct"][0], sides["Y"]: spec["correct"][1]}
                metadata["correct_a"], metadata["correct_b"] = correct["A"], correct["B"]
            samples.append(
                DemoSample(
                    external_id=f"{prefix}-{i + 1:02d}",
                    split=split,
                    question=spec["question"],
                    image=spec["image"],
                    response_a=texts["A"],
                    response_b=texts["B"],
                    model_a=model_a,
                    model_b=model_b,
                    source=spec["source"],
                    pair_type="same_model" if same_model else "cross_model",
                    is_seed=i < SEEDS_PER_SPLIT,
                    truth={key: sides[side] for key, side in spec["truth"].items()},
                    reference_answer=spec.get("answer", ""),
                    metadata=metadata,
                )
            )
    return samples
