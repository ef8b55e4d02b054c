"""Import of our JSONL sample format: every error class, idempotence, the write itself."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.core.management import CommandError, call_command

from annotation.importing.errors import ImportRejected
from annotation.importing.service import samples_import
from annotation.models import ReferenceLabel, Sample, Slot

from .import_data import jpeg_bytes, png_bytes, sample_line, write_jsonl

pytestmark = pytest.mark.django_db


def counts(project) -> tuple[int, int, int]:
    return (
        Sample.objects.filter(project=project).count(),
        Slot.objects.filter(sample__project=project).count(),
        ReferenceLabel.objects.filter(sample__project=project).count(),
    )


def rejected(project, path, **kw) -> list[tuple[int | None, str, str]]:
    with pytest.raises(ImportRejected) as info:
        samples_import(project=project, path=path, **kw)
    return [(p.line, p.field, p.message) for p in info.value.problems]


def test_valid_file_creates_samples_slots_references_and_images(project, tmp_path):
    path = write_jsonl(
        tmp_path / "data.jsonl",
        [
            sample_line("s1", reference={"completeness": "A", "clarity": "tie"}),
            sample_line("s2", is_seed=True, reference={"hallucination": "model_b"}),
            sample_line(
                "r1",
                split="reasoning",
                pair_type="same_model",
                metadata={"correct_a": True},
                reference_answer="42",
            ),
        ],
    )
    report = samples_import(project=project, path=path)
    assert (report.created, report.updated, report.unchanged) == (3, 0, 0)
    s1 = Sample.objects.get(project=project, external_id="s1")
    assert s1.image_width == 40 and s1.image_height == 30 and len(s1.image_sha256) == 64
    assert s1.image.name.startswith(f"samples/{project.pk}/original/")
    assert s1.image_web.name.startswith(f"samples/{project.pk}/web/")
    assert s1.image.read() == png_bytes()
    assert list(s1.slots.values_list("index", "annotator")) == [(1, None), (2, None), (3, None)]
    assert dict(
        ReferenceLabel.objects.filter(sample=s1).values_list("criterion__key", "preference")
    ) == {"completeness": "A", "clarity": "tie"}
    seed = Sample.objects.get(external_id="s2")
    assert seed.is_seed and seed.slots.count() == 0
    assert seed.reference_labels.get().preference == "B"
    r1 = Sample.objects.get(external_id="r1")
    assert (r1.split, r1.pair_type, r1.reference_answer) == ("reasoning", "same_model", "42")
    assert r1.metadata == {"correct_a": True}
    assert counts(project) == (3, 6, 3)


def test_reimport_of_the_same_file_changes_nothing(project, tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", [sample_line("s1"), sample_line("s2")])
    samples_import(project=project, path=path)
    before = list(Sample.objects.values_list("pk", "updated_at", "content_hash"))
    report = samples_import(project=project, path=path)
    assert (report.created, report.updated, report.unchanged) == (0, 0, 2)
    assert list(Sample.objects.values_list("pk", "updated_at", "content_hash")) == before
    assert counts(project) == (2, 6, 0)


def test_changed_sample_is_an_error_without_update_and_replaced_with_it(project, tmp_path):
    samples_import(project=project, path=write_jsonl(tmp_path / "a.jsonl", [sample_line("s1")]))
    changed = write_jsonl(
        tmp_path / "b.jsonl", [sample_line("s0"), sample_line("s1", response_a="Changed.")]
    )
    assert rejected(project, changed) == [
        (
            2,
            "id",
            "sample 's1' already exists with different content; import with --update "
            "(Replace changed samples) to replace it",
        )
    ]
    assert Sample.objects.get(external_id="s1").response_a.startswith("A red rectangle")
    assert counts(project) == (1, 3, 0)
    report = samples_import(project=project, path=changed, update=True)
    assert (report.created, report.updated) == (1, 1)
    assert Sample.objects.get(external_id="s1").response_a == "Changed."
    assert counts(project) == (2, 6, 0)


def test_every_error_is_listed_with_line_and_field_and_nothing_is_written(project, tmp_path):
    samples_import(project=project, path=write_jsonl(tmp_path / "ok.jsonl", [sample_line("old")]))
    before = counts(project)
    truncated = jpeg_bytes((64, 64))[:-200]
    path = write_jsonl(
        tmp_path / "bad" / "data.jsonl",
        [
            sample_line("good"),
            '{"id": "x", "split": ',
            json.dumps({k: v for k, v in sample_line("m").items() if k != "question"}),
            sample_line("u", split="chat"),
            sample_line("i", image="img/not-an-image.png"),
            sample_line("t", image="img/truncated.jpg"),
            sample_line("good"),
            sample_line("c", reference={"speed": "A"}),
            sample_line("z", image="../outside.png"),
            sample_line("n", image="img/missing.png"),
            "[1, 2]",
        ],
        images={
            "img/red.png": png_bytes(),
            "img/not-an-image.png": b"this is text, not a picture",
            "img/truncated.jpg": truncated,
        },
    )
    problems = rejected(project, path)
    by_line = {(line, field): message for line, field, message in problems}
    assert set(by_line) == {
        (2, "json"),
        (3, "question"),
        (4, "split"),
        (5, "image"),
        (6, "image"),
        (7, "id"),
        (8, "reference.speed"),
        (9, "image"),
        (10, "image"),
        (11, "json"),
    }
    assert by_line[(2, "json")].startswith("invalid JSON")
    assert by_line[(3, "question")] == "missing field"
    assert by_line[(4, "split")] == "unknown split 'chat' (expected open_ended or reasoning)"
    assert by_line[(5, "image")].startswith("not an image")
    assert by_line[(6, "image")].startswith("truncated image")
    assert by_line[(7, "id")] == "duplicate id 'good' (first at line 1)"
    assert by_line[(8, "reference.speed")] == "unknown criterion 'speed' for split open_ended"
    assert "'..'" in by_line[(9, "image")]
    assert by_line[(10, "image")] == (
        "image file not found: 'img/missing.png' (tried img/missing.png beside data.jsonl)"
    )
    assert by_line[(11, "json")] == "expected a JSON object, got list"
    assert counts(project) == before
    assert Sample.objects.get(external_id="old").response_a.startswith("A red")


def test_decompression_bomb_is_rejected(project, tmp_path, settings):
    settings.IMAGE_MAX_PIXELS = 1000
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [sample_line("big", image="big.png")],
        images={"big.png": png_bytes(size=(100, 100))},
    )
    ((line, field, message),) = rejected(project, path)
    assert (line, field) == (1, "image")
    assert "decompression bomb" in message and "10000" not in message


def test_zip_with_images_imports_and_zip_slip_is_refused(project, tmp_path):
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as archive:
        archive.writestr("set/data.jsonl", json.dumps(sample_line("z1", image="img/p.png")))
        archive.writestr("set/img/p.png", png_bytes("green"))
    report = samples_import(project=project, path=good)
    assert report.created == 1
    assert Sample.objects.get(external_id="z1").image.read() == png_bytes("green")

    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("data.jsonl", json.dumps(sample_line("z2", image="p.png")))
        archive.writestr("p.png", png_bytes())
        archive.writestr("../../escape.txt", b"x")
        archive.writestr("/etc/absolute.png", png_bytes())
    problems = rejected(project, evil)
    assert [(line, field) for line, field, _ in problems] == [
        (None, "zip entry"),
        (None, "zip entry"),
    ]
    assert "'..'" in problems[0][2] and "absolute" in problems[1][2]
    assert counts(project) == (1, 3, 0)


def test_exif_orientation_is_applied_and_original_kept(project, tmp_path):
    original = jpeg_bytes((60, 20), orientation=6)  # rotated 90 degrees: shown as 20 x 60
    path = write_jsonl(
        tmp_path / "e.jsonl", [sample_line("e", image="e.jpg")], images={"e.jpg": original}
    )
    samples_import(project=project, path=path)
    sample = Sample.objects.get(external_id="e")
    assert (sample.image_width, sample.image_height) == (20, 60)
    assert sample.image.read() == original


def test_command_prints_summary_and_fails_with_listed_errors(project, tmp_path, capsys):
    path = write_jsonl(tmp_path / "c.jsonl", [sample_line("c1"), sample_line("c2")])
    call_command("import_samples", "new-project", str(path), "--name", "New one")
    out = capsys.readouterr().out
    assert "2 samples read (jsonl); 2 created; 0 updated; 0 unchanged" in out
    assert Sample.objects.filter(project__slug="new-project").count() == 2
    bad = write_jsonl(tmp_path / "x.jsonl", [sample_line("c3", split="nope")])
    with pytest.raises(CommandError, match="1 error"):
        call_command("import_samples", "new-project", str(bad))
    assert "line 1, split: unknown split 'nope'" in capsys.readouterr().err


def test_zip_without_a_data_file_and_wrong_suffix_are_refused(project, tmp_path):
    empty = tmp_path / "images-only.zip"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("img/p.png", png_bytes())
    ((line, field, message),) = rejected(project, empty)
    assert (line, field) == (None, "zip") and "exactly one .jsonl or .parquet" in message
    text = tmp_path / "notes.csv"
    text.write_text("a,b\n")
    ((line, field, message),) = rejected(project, text)
    assert (line, field) == (None, "file") and "expected a .jsonl, .parquet or .zip" in message
