"""Files in the published layout: split spellings, several files per call, images roots."""

from __future__ import annotations

import io
import json
import shutil
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.importing.errors import ImportRejected
from annotation.importing.service import samples_import
from annotation.models import PairType, ReferenceLabel, Sample, Slot
from core.models import Job
from tests.published_data import published_rows, write_flat_jsonl, write_parquet

pytestmark = pytest.mark.django_db


def references() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for sample, key, pref in ReferenceLabel.objects.values_list(
        "sample__external_id", "criterion__key", "preference"
    ):
        out.setdefault(sample, {})[key] = pref
    return out


def expected(rows: list[dict]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for row in rows:
        out.setdefault(row["prompt_id"], {})[row["criterion"]] = (
            "A" if row["preference"] == "model_a" else "B"
        )
    return out


def question_ids(rows: list[dict]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for row in rows:
        out.setdefault(row["prompt_id"], {})[row["criterion"]] = row["question_id"]
    return out


def test_flattened_jsonl_with_openended_and_an_images_root(project, tmp_path):
    rows = published_rows(4, 3, seed=1)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    data = write_flat_jsonl(rows, data_dir / "multicrit.jsonl", tmp_path / "images")
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_samples",
        project.slug,
        str(data),
        "--images",
        str(tmp_path / "images"),
        stdout=out,
        stderr=err,
    )
    assert "7 samples read (multicrit-jsonl)" in out.getvalue()
    samples = {s.external_id: s for s in Sample.objects.filter(project=project)}
    assert {s.split for s in samples.values()} == {"open_ended", "reasoning"}
    assert {k for k, s in samples.items() if s.split == "open_ended"} == {
        r["prompt_id"] for r in rows if r["split"] == "open_ended"
    }
    assert references() == expected(rows)
    ids = question_ids(rows)
    assert {k: s.metadata["question_ids"] for k, s in samples.items()} == ids
    # model_a == model_b is a same-model pair
    for row in rows:
        sample = samples[row["prompt_id"]]
        same = row["model_a"] == row["model_b"]
        assert sample.pair_type == (PairType.SAME_MODEL if same else PairType.CROSS_MODEL)
    assert any(s.pair_type == PairType.SAME_MODEL for s in samples.values())
    assert all(s.image_sha256 for s in samples.values())


def test_a_missing_image_names_every_path_tried(project, tmp_path):
    rows = published_rows(2, 0, seed=2)
    data = write_flat_jsonl(rows, tmp_path / "multicrit.jsonl", tmp_path / "images")
    missing = rows[0]["image_path"]
    (tmp_path / "images" / missing).unlink()
    with pytest.raises(ImportRejected) as caught:
        samples_import(project=project, path=data, images=tmp_path / "images")
    messages = {str(p) for p in caught.value.problems}
    shown = str(tmp_path / "images")
    assert (
        f"row 1, image_path: image file not found: {missing!r} "
        f"(tried {shown}/{missing}, {missing} beside multicrit.jsonl)"
    ) in messages
    assert not Sample.objects.exists()
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_samples", project.slug, str(data), "--images", shown, stderr=err)
    assert f"tried {shown}/{missing}" in err.getvalue()


def test_parquet_shards_per_split_and_a_prompt_across_shards_in_one_call(project, tmp_path):
    rows = published_rows(5, 5, seed=3)
    open_rows = [r for r in rows if r["split"] == "open_ended"]
    reasoning = [r for r in rows if r["split"] == "reasoning"]
    # The first reasoning prompt's rows are spread over two shards.
    first = reasoning[0]["prompt_id"]
    spread = [r for r in reasoning if r["prompt_id"] == first]
    shard_a = write_parquet(
        open_rows + spread[:2], tmp_path / "train-00000.parquet", split_label=None
    )
    shard_b = write_parquet(
        [r for r in reasoning if r not in spread[:2]], tmp_path / "train-00001.parquet"
    )
    report = samples_import(project=project, path=[shard_a, shard_b])
    assert report.created == 10 and report.format == "multicrit-parquet"
    assert references() == expected(rows)
    stored = Sample.objects.get(project=project, external_id=first)
    assert stored.metadata["question_ids"] == question_ids(rows)[first]
    # Again: nothing changes.
    again = samples_import(project=project, path=[shard_a, shard_b])
    assert again.unchanged == 10 and again.created == again.merged == 0


def test_a_prompt_across_successive_imports_merges_without_update(project, tmp_path):
    rows = published_rows(3, 0, seed=4)
    prompt = rows[-1]["prompt_id"]  # a prompt with every criterion
    mine = [r for r in rows if r["prompt_id"] == prompt]
    assert len(mine) >= 3
    first = write_parquet(mine[:2], tmp_path / "part1.parquet", split_label="open-ended")
    rest = [r for r in rows if r not in mine[:2]]
    second = write_parquet(rest, tmp_path / "part2.parquet", split_label="Open_Ended")
    samples_import(project=project, path=first)
    slots_before = Slot.objects.count()
    report = samples_import(project=project, path=second)
    assert report.merged == 1 and report.created == len({r["prompt_id"] for r in rest}) - 1
    assert "1 merged" in report.summary()
    assert references() == expected(rows)
    sample = Sample.objects.get(project=project, external_id=prompt)
    assert sample.metadata["question_ids"] == question_ids(rows)[prompt]
    assert Slot.objects.filter(sample=sample).count() == project.annotators_per_sample
    assert Slot.objects.count() == slots_before + 3 * (report.created)
    # Both again, one call or two: unchanged.
    assert samples_import(project=project, path=[first, second]).unchanged == 3
    assert samples_import(project=project, path=first).unchanged == 1
    # A different preference for a stored criterion still needs --update.
    flipped = [
        dict(mine[0], preference="model_b" if mine[0]["preference"] == "model_a" else "model_a")
    ]
    bad = write_parquet(flipped, tmp_path / "flip.parquet")
    with pytest.raises(ImportRejected) as caught:
        samples_import(project=project, path=bad)
    (problem,) = caught.value.problems
    assert problem.field == "prompt_id"
    assert f"a different preference for {mine[0]['criterion']}" in problem.message
    assert "--update" in problem.message


def test_problems_in_several_files_name_the_file(project, tmp_path):
    rows = published_rows(2, 0, seed=5)
    good = write_parquet(rows, tmp_path / "good.parquet")
    broken = tmp_path / "broken.jsonl"
    record = {k: v for k, v in rows[0].items() if not k.startswith("_")}
    record.update(prompt_id="zz", question_id="zz_x", split="openended", criterion="speed")
    broken.write_text(json.dumps(record) + "\n")
    with pytest.raises(ImportRejected) as caught:
        samples_import(project=project, path=[good, broken])
    assert [str(p) for p in caught.value.problems] == [
        "broken.jsonl row 1, criterion: unknown criterion 'speed' for split open_ended"
    ]
    ours = tmp_path / "ours.jsonl"
    ours.write_text(json.dumps({"id": "x", "split": "reasoning"}) + "\n")
    with pytest.raises(ImportRejected, match="only for the Multi-Crit row format; not rows"):
        samples_import(project=project, path=[good, ours])


def test_zip_upload_with_an_images_folder(
    client, lead, project, tmp_path, django_capture_on_commit_callbacks
):
    rows = published_rows(2, 1, seed=6)
    staging = tmp_path / "staging"
    write_flat_jsonl(rows, tmp_path / "multicrit.jsonl", staging)
    archive_path = tmp_path / "release.zip"
    with zipfile.ZipFile(archive_path, "w") as archive:
        archive.write(tmp_path / "multicrit.jsonl", "data/multicrit.jsonl")
        for image in staging.rglob("*.png"):
            archive.write(image, f"assets/pictures/{image.relative_to(staging)}")
    shutil.rmtree(staging)
    client.force_login(lead)
    url = reverse("import-upload", args=[project.slug])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {
                "file": SimpleUploadedFile("release.zip", archive_path.read_bytes()),
                "images": "assets/pictures",
            },
        )
    assert response.status_code == 302
    job = Job.objects.get(kind=Job.Kind.IMPORT)
    assert job.status == Job.Status.SUCCEEDED, (job.message, job.result)
    assert job.result["created"] == 3
    assert references() == expected(rows)

    # An images folder for a file that is no zip is a form error; nothing is queued.
    response = client.post(
        url,
        {"file": SimpleUploadedFile("rows.jsonl", b"{}\n"), "images": "pictures"},
    )
    assert response.status_code == 200
    assert "An images folder is only for a zip upload." in response.content.decode()
    response = client.post(
        url, {"file": SimpleUploadedFile("r.zip", archive_path.read_bytes()), "images": "../x"}
    )
    assert "paths with &#x27;..&#x27; are not allowed" in response.content.decode()
    assert Job.objects.count() == 1
