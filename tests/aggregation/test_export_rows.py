"""Rows of an export: their schema, ids, preference mapping, and what is left out."""

import json

import pytest

from aggregation.export.rows import ROW_FIELDS, image_relpath, preference_name
from aggregation.models import ReviewDecision
from aggregation.services.versions import version_build
from annotation.models import Vote
from annotation.pseudonyms import Pseudonyms


def rows_of(version):
    return [r.data for r in version.rows.order_by("id")]


def test_every_row_has_the_published_schema(project, lead, data):
    version = version_build(project=project, by=lead)
    rows = rows_of(version)
    assert len(rows) == version.row_count == 4
    for row in rows:
        assert list(row) != [] and set(row) == set(ROW_FIELDS)
        assert all(isinstance(row[f], str) for f in ROW_FIELDS)
        assert row["question_id"] == f"{row['prompt_id']}__{row['criterion']}"
        assert row["split"] in {"open_ended", "reasoning"}
        assert row["preference"] in {"model_a", "model_b"}
        assert row["image_path"] == f"images/{row['prompt_id']}.png"
    p2 = next(r for r in rows if r["prompt_id"] == "p2")
    sample = data["samples"]["p2"]
    assert p2 == {
        "question_id": f"p2__{data['oe'][0].key}",
        "prompt_id": "p2",
        "split": "open_ended",
        "criterion": data["oe"][0].key,
        "question": sample.question,
        "image_path": "images/p2.png",
        "pred_a": sample.response_a,
        "pred_b": sample.response_b,
        "model_a": "m-2a",
        "model_b": "m-2b",
        "preference": "model_b",
        "provenance": "human",
    }
    # The frozen rows are the JSONL lines, in the same order.
    with version.files.get(kind="jsonl").file.open("rb") as fh:
        assert [json.loads(line) for line in fh] == rows


def test_row_order_and_preference_mapping(project, lead, data):
    rows = rows_of(version_build(project=project, by=lead))
    oe = data["oe"]
    assert [(r["question_id"], r["preference"]) for r in rows] == [
        (f"p1__{oe[0].key}", "model_a"),  # A, A, A
        (f"p1__{oe[1].key}", "model_b"),  # B, B, tie
        (f"p2__{oe[0].key}", "model_b"),  # B, B, B
        (f"r1__{data['rs'][0].key}", "model_a"),  # A, A, tie
    ]
    assert preference_name("A") == "model_a" and preference_name("B") == "model_b"
    with pytest.raises(ValueError, match="must prefer A or B"):
        preference_name("tie")


def test_dropped_labels_and_seeds_are_left_out_unless_seeds_are_asked_for(project, lead, data):
    dropped = f"p1__{data['oe'][2].key}"
    seed_row = f"seed1__{data['oe'][0].key}"
    qids = {r["question_id"] for r in rows_of(version_build(project=project, by=lead))}
    assert dropped not in qids and seed_row not in qids
    with_seeds = version_build(project=project, by=lead, include_seeds=True)
    assert with_seeds.include_seeds
    qids = {r["question_id"] for r in rows_of(with_seeds)}
    assert seed_row in qids and dropped not in qids and len(qids) == 5


def test_project_setting_decides_seeds_by_default(project, lead, data):
    project.export_includes_seeds = True
    project.save()
    version = version_build(project=project, by=lead)
    assert version.include_seeds and version.row_count == 5


def test_discarded_labels_and_samples_are_left_out(project, lead, data):
    s1, s2 = data["samples"]["p1"], data["samples"]["p2"]
    oe = data["oe"]
    ReviewDecision.objects.create(
        sample=s1, criterion=oe[0], action="discard", reason="inconsistent", author=lead
    )
    ReviewDecision.objects.create(sample=s2, action="discard", reason="redundant", author=lead)
    qids = [r["question_id"] for r in rows_of(version_build(project=project, by=lead))]
    assert qids == [f"p1__{oe[1].key}", f"r1__{data['rs'][0].key}"]
    # A later "keep" restores the sample.
    ReviewDecision.objects.create(sample=s2, action="keep", author=lead)
    qids = [r["question_id"] for r in rows_of(version_build(project=project, by=lead))]
    assert f"p2__{oe[0].key}" in qids


def test_retired_samples_are_left_out(project, lead, data):
    data["samples"]["p2"].status = "retired"
    data["samples"]["p2"].save()
    rows = rows_of(version_build(project=project, by=lead))
    assert "p2" not in {r["prompt_id"] for r in rows}


def test_votes_column_is_pseudonymised_and_stable(project, lead, annotators, data):
    first = rows_of(version_build(project=project, by=lead, include_votes=True))
    again = rows_of(version_build(project=project, by=lead, include_votes=True))
    assert first == again
    p1 = first[0]
    assert set(p1) == {*ROW_FIELDS, "votes"}
    assert p1["votes"] == [
        {
            "annotator": f"annotator_0{i}",
            "choice": "model_a",
            "rationale": f"ann{i} reasons about {data['oe'][0].key} on p1.",
            "unsure": False,
        }
        for i in (1, 2, 3)
    ]
    assert [v["choice"] for v in first[1]["votes"]] == ["model_b", "model_b", "tie"]
    # p2 was labeled by three other annotators: they get the next names.
    assert [v["annotator"] for v in first[2]["votes"]] == [
        "annotator_04",
        "annotator_05",
        "annotator_06",
    ]
    text = json.dumps(first)
    assert not any(f'"{u.username}"' in text for u in annotators)


def test_pseudonyms_follow_first_appearance():
    names = Pseudonyms()
    votes = [
        {"id": 9, "annotator_id": 42, "choice": "B", "rationale": "r2", "unsure": True},
        {"id": 3, "annotator_id": 7, "choice": "tie", "rationale": "r1"},
    ]
    assert names.votes(votes) == [
        {"annotator": "annotator_01", "choice": "tie", "rationale": "r1", "unsure": False},
        {"annotator": "annotator_02", "choice": "model_b", "rationale": "r2", "unsure": True},
    ]
    assert names.name(42) == "annotator_02" and names.name(5) == "annotator_03"


@pytest.mark.parametrize(
    ("prompt_id", "name", "expected"),
    [
        ("p1", "samples/1/original/p1.PNG", "images/p1.png"),
        ("a-b_c.d", "x.jpeg", "images/a-b_c.d.jpeg"),
        ("", "x.png", None),
    ],
)
def test_image_paths_are_relative(prompt_id, name, expected):
    if prompt_id:
        assert image_relpath(prompt_id, name) == expected
    assert image_relpath("p", "") is None


def test_unsafe_ids_never_leave_the_images_folder():
    path = image_relpath("../../etc/passwd", "x.png")
    assert path.startswith("images/") and ".." not in path.split("/") and path.count("/") == 1
    assert image_relpath("a/b", "x.png") != image_relpath("a_b", "x.png")
    assert image_relpath(".hidden", "x.gif").startswith("images/hidden-")


def test_votes_column_carries_the_not_sure_flag(project, lead, annotators, data):
    Vote.objects.filter(annotator=annotators[0]).update(unsure=True)
    p1 = rows_of(version_build(project=project, by=lead, include_votes=True))[0]
    assert [(v["annotator"], v["unsure"]) for v in p1["votes"]] == [
        ("annotator_01", True),
        ("annotator_02", False),
        ("annotator_03", False),
    ]
