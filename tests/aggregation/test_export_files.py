"""Files of a version: reproducible bytes, manifest figures, Parquet and zip layouts."""

import hashlib
import io
import json
import zipfile

import pandas as pd
import pytest
from django.utils import timezone
from PIL import Image

from aggregation.models import AgreementSnapshot, DatasetFile
from aggregation.services.versions import version_build
from tests.aggregation.export_data import png_bytes


def content(version, kind):
    with version.files.get(kind=kind).file.open("rb") as fh:
        return fh.read()


DATA_KINDS = ("jsonl", "jsonl_zip", "parquet")
SUFFIX = {"jsonl": "jsonl", "jsonl_zip": "zip", "parquet": "parquet"}


@pytest.mark.parametrize("votes", [False, True])
def test_two_builds_are_byte_identical(project, lead, data, votes):
    v1 = version_build(project=project, by=lead, include_votes=votes)
    v2 = version_build(project=project, by=lead, include_votes=votes)
    assert (v1.number, v2.number) == (1, 2)
    for kind in DATA_KINDS:
        assert content(v1, kind) == content(v2, kind), kind
        assert v1.files.get(kind=kind).sha256 == v2.files.get(kind=kind).sha256
    assert v1.manifest["data_sha256"] == v2.manifest["data_sha256"]
    # The manifest is the one file that differs: it names its version.
    assert content(v1, "manifest") != content(v2, "manifest")
    assert json.loads(content(v2, "manifest"))["version"] == 2


def test_different_labels_give_a_different_checksum(project, lead, data):
    v1 = version_build(project=project, by=lead)
    label = data["labels"]["p2_0"]
    label.preference = "A"
    label.save()
    v2 = version_build(project=project, by=lead)
    assert v1.manifest["data_sha256"] != v2.manifest["data_sha256"]


def test_manifest_figures_and_checksums(project, lead, data):
    AgreementSnapshot.objects.create(
        project=project,
        split="open_ended",
        figures={"split": "open_ended", "cohen": {"value": 0.72, "ci": [0.6, 0.8]}},
        computed_at=timezone.now(),
    )
    version = version_build(project=project, by=lead)
    manifest = json.loads(content(version, "manifest"))
    assert manifest == version.manifest
    oe, rs = data["oe"], data["rs"]
    assert manifest["version"] == 1
    assert manifest["project"] == {
        "slug": "test-project",
        "name": "Test project",
        "label_scale": "pairwise",
        "scale_rule": "each vote is A, B or tie",
    }
    assert manifest["created_by"] == "lead" and manifest["created"]
    assert manifest["aggregation_rule"]["name"] == "unanimous_or_majority_plus_tie"
    assert manifest["options"]["include_votes"] is False
    assert manifest["options"]["policy"] == {
        "early_stopping": False,
        "routing_policy": "off",
        "audit_share": 0.2,
        "audit_seed": 0,
    }
    by_provenance = manifest["counts"].pop("labels_by_provenance")
    assert set(by_provenance) == {"human"} and by_provenance["human"]["kept"] == 4
    assert manifest["counts"] == {
        "rows": 4,
        "prompts": 3,
        "images": 3,
        "conflict_prompts": 1,
        "conflict_share": 0.3333,
        "provenance": {"human": 4},
        "per_split": {
            "open_ended": {
                "rows": 3,
                "prompts": 2,
                "conflict_prompts": 1,
                "conflict_share": 0.5,
                "per_criterion": {oe[0].key: 2, oe[1].key: 1},
                "provenance": {"human": 3},
            },
            "reasoning": {
                "rows": 1,
                "prompts": 1,
                "conflict_prompts": 0,
                "conflict_share": 0.0,
                "per_criterion": {rs[0].key: 1},
                "provenance": {"human": 1},
            },
        },
    }
    assert manifest["agreement"] == {
        "open_ended": {"split": "open_ended", "cohen": {"value": 0.72, "ci": [0.6, 0.8]}}
    }
    listed = {f["kind"]: f for f in manifest["files"]}
    assert set(listed) == set(DATA_KINDS)
    for kind in DATA_KINDS:
        body = content(version, kind)
        record = version.files.get(kind=kind)
        assert listed[kind]["sha256"] == hashlib.sha256(body).hexdigest() == record.sha256
        assert listed[kind]["size"] == len(body) == record.size
        assert listed[kind]["name"] == f"test-project-v1.{SUFFIX[kind]}"
    record = version.files.get(kind=DatasetFile.Kind.MANIFEST)
    assert record.sha256 == hashlib.sha256(content(version, "manifest")).hexdigest()


def test_parquet_round_trip_through_pandas(project, lead, data, tmp_path):
    version = version_build(project=project, by=lead, include_votes=True)
    path = tmp_path / "d.parquet"
    path.write_bytes(content(version, "parquet"))
    frame = pd.read_parquet(path)
    rows = [r.data for r in version.rows.order_by("id")]
    assert list(frame.columns) == [
        "question_id", "prompt_id", "split", "criterion", "question", "image", "image_path",
        "pred_a", "pred_b", "model_a", "model_b", "preference", "provenance", "votes",
    ]  # fmt: skip
    assert frame["question_id"].tolist() == [r["question_id"] for r in rows]
    assert frame["preference"].tolist() == [r["preference"] for r in rows]
    first = frame.iloc[0]
    assert first["image"]["path"] == "images/p1.png"
    assert first["image"]["bytes"] == png_bytes((255, 0, 0))
    assert [v["annotator"] for v in first["votes"]] == [
        "annotator_01",
        "annotator_02",
        "annotator_03",
    ]


def test_parquet_loads_with_datasets_and_decodes_the_image(
    project, lead, data, tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets

    version = version_build(project=project, by=lead)
    path = tmp_path / "d.parquet"
    path.write_bytes(content(version, "parquet"))
    ds = datasets.load_dataset(
        "parquet", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert isinstance(ds.features["image"], datasets.Image)
    assert ds.num_rows == 4
    by_prompt = {row["prompt_id"]: row for row in ds}
    for prompt, color in {"p1": (255, 0, 0), "p2": (0, 255, 0), "r1": (0, 0, 255)}.items():
        image = by_prompt[prompt]["image"]
        assert isinstance(image, Image.Image)
        expected = Image.open(io.BytesIO(png_bytes(color)))
        assert image.size == expected.size == (12, 8)
        assert image.convert("RGB").tobytes() == expected.convert("RGB").tobytes()
    assert by_prompt["p2"]["preference"] == "model_b"


def test_zip_holds_the_jsonl_and_the_images_with_relative_paths(project, lead, data):
    version = version_build(project=project, by=lead)
    with zipfile.ZipFile(io.BytesIO(content(version, "jsonl_zip"))) as zf:
        names = zf.namelist()
        # One pass: each image as its prompt's rows go by, the rows once all are written.
        assert names == ["images/p1.png", "images/p2.png", "images/r1.png", "rows.jsonl"]
        assert [i.compress_type for i in zf.infolist()] == [zipfile.ZIP_STORED] * 3 + [
            zipfile.ZIP_DEFLATED
        ]
        for info in zf.infolist():
            assert not info.filename.startswith("/") and ".." not in info.filename.split("/")
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
        assert zf.read("rows.jsonl") == content(version, "jsonl")
        rows = [json.loads(line) for line in zf.read("rows.jsonl").splitlines()]
        assert {r["image_path"] for r in rows} <= set(names)
        assert zf.read("images/r1.png") == png_bytes((0, 0, 255))
        assert zf.testzip() is None


def test_jsonl_lines_have_sorted_keys_and_no_build_time(project, lead, data):
    version = version_build(project=project, by=lead)
    body = content(version, "jsonl").decode()
    for line in body.splitlines():
        assert list(json.loads(line)) == sorted(json.loads(line))
    assert str(timezone.now().year) not in body and "test-project-v1" not in body


def test_a_sample_without_an_image_has_a_null_image(project, lead, annotators):
    from tests.aggregation.export_data import criteria, label_with_votes
    from tests.conftest import make_sample

    sample = make_sample(project, "noimg")
    label_with_votes(sample, criteria(project)[0], annotators[:3], "AAA")
    version = version_build(project=project, by=lead)
    assert version.rows.get().data["image_path"] is None
    with zipfile.ZipFile(io.BytesIO(content(version, "jsonl_zip"))) as zf:
        assert zf.namelist() == ["rows.jsonl"]
