"""A dataset version for the judge runner tests: samples with real images, and judge configs."""

from __future__ import annotations

import hashlib
import io

from django.core.files.base import ContentFile
from PIL import Image

from aggregation.models import DatasetVersion
from annotation.models import Project, Sample
from judging.models import JudgeConfig
from tests.judging.web_data import version_from_records

SHORT, LONG = "A cat.", "A grey cat sleeping on a red sofa by the window."
# (prompt, criterion, pred_a, pred_b, human preference). The fake judge prefers the longer
# response, so with A/B only it is right on p1 and p2 completeness and on p3 (all four rows).
RUNNER_ROWS = [
    ("p1", "completeness", LONG, SHORT, "model_a"),
    ("p1", "hallucination", LONG, SHORT, "model_b"),
    ("p2", "completeness", SHORT, LONG, "model_b"),
    ("p2", "hallucination", SHORT, LONG, "model_a"),
    ("p3", "completeness", SHORT, SHORT + " ", "model_a"),
    ("p3", "hallucination", LONG, SHORT, "model_a"),
]


def png_bytes(width: int, height: int, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return out.getvalue()


def runner_version(
    project: Project,
    rows=RUNNER_ROWS,
    *,
    image_size: tuple[int, int] = (2000, 1000),
    question: str = "What does image {prompt} show?",
) -> DatasetVersion:
    """A ready version over ``rows``; every prompt's sample has a PNG image of ``image_size``."""
    records = []
    for n, prompt in enumerate(dict.fromkeys(r[0] for r in rows)):
        data = png_bytes(*image_size, color=(40 * n, 100, 200))
        sample = Sample.objects.create(
            project=project,
            external_id=prompt,
            split="open_ended",
            question=question.format(prompt=prompt),
            response_a="a",
            response_b="b",
            image_sha256=hashlib.sha256(data).hexdigest(),
        )
        sample.image.save(f"{prompt}.png", ContentFile(data), save=True)
    for prompt, criterion, pred_a, pred_b, preference in rows:
        records.append(
            {
                "question_id": f"{prompt}__{criterion}",
                "prompt_id": prompt,
                "split": "open_ended",
                "criterion": criterion,
                "question": question.format(prompt=prompt),
                "image_path": f"images/{prompt}.png",
                "pred_a": pred_a,
                "pred_b": pred_b,
                "model_a": "model-x",
                "model_b": "model-y",
                "preference": preference,
            }
        )
    return version_from_records(project, records)


def judge_config(url: str, **fields) -> JudgeConfig:
    """A saved config pointing at ``url`` (fast retries for tests)."""
    values = {
        "name": "fake-judge",
        "base_url": url,
        "model": "fake-vl-7b",
        "concurrency": 4,
        "retries": 3,
        "timeout_seconds": 10,
    }
    values.update(fields)
    config = JudgeConfig(**values)
    config.full_clean()
    config.save()
    return config
