"""The curation pipeline on the database: raw import, runs, decisions, promotion, command."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.importing.errors import ImportRejected
from annotation.models import Sample, Slot
from curation.models import CandidatePair, CurationRun, PairDecision, RawPrompt, RawResponse
from curation.services.generations import generations_import
from curation.services.pipeline import RunOptions, curation_run
from curation.services.promote import pairs_promote
from curation.services.verdicts import CurationError, JudgeConfigMissing
from tests.judging.fake_openai import FakeOpenAI
from tests.judging.runner_data import judge_config

from .data import open_prompt, reasoning_prompt, response, write_generations

pytestmark = pytest.mark.django_db

RIGHT_WRONG = {"model-a": "12", "model-b": "13", "model-c": "12"}


def _file(tmp_path, prompts=None):
    prompts = prompts or [open_prompt(f"o{i}") for i in range(4)] + [
        reasoning_prompt(f"r{i}", RIGHT_WRONG) for i in range(4)
    ]
    return write_generations(tmp_path, prompts)


def test_raw_import_stores_prompts_and_responses_and_is_idempotent(tmp_path, project):
    path = _file(tmp_path)
    report = generations_import(project=project, path=path)
    assert (report.created, report.unchanged, report.responses) == (8, 0, 24)
    prompt = RawPrompt.objects.get(project=project, prompt_id="r0")
    assert (prompt.split, prompt.source, prompt.reference_answer) == (
        "reasoning",
        "MathVista",
        "12",
    )
    assert prompt.image.name.startswith(f"curation/{project.pk}/")
    assert sorted(prompt.responses.values_list("model", flat=True)) == list(RIGHT_WRONG)
    again = generations_import(project=project, path=path)
    assert (again.created, again.unchanged) == (0, 8)
    assert RawResponse.objects.filter(prompt__project=project).count() == 24


def test_raw_import_lists_every_error_with_line_and_field_and_writes_nothing(tmp_path, project):
    bad_response = open_prompt("o2")
    bad_response["responses"][1] = {"model": "model-b", "sample": -1}
    no_reference = reasoning_prompt("r1", RIGHT_WRONG, reference="")
    verdict = open_prompt(
        "o3", verdicts=[{"a": {"model": "model-a"}, "b": {"model": "nobody"}, "judges": ["A"]}]
    )
    prompts = [open_prompt("o1"), bad_response, no_reference, verdict, open_prompt("o1")]
    path = write_generations(tmp_path, prompts)
    with pytest.raises(ImportRejected) as caught:
        generations_import(project=project, path=path)
    found = {(p.line, p.field) for p in caught.value.problems}
    assert found == {
        (2, "responses[1].text"),
        (2, "responses[1].sample"),
        (3, "reference_answer"),
        (4, "verdicts[0].b"),
        (5, "prompt_id"),
    }
    messages = {p.field: p.message for p in caught.value.problems}
    assert messages["verdicts[0].b"] == "no response of model 'nobody' sample 0"
    assert messages["prompt_id"] == "duplicate prompt id 'o1' (first at line 1)"
    assert not RawPrompt.objects.exists()


def test_changed_prompt_is_refused_without_update(tmp_path, project):
    generations_import(project=project, path=_file(tmp_path))
    changed = [open_prompt("o0", source="Other")]
    path = write_generations(tmp_path / "b", changed)
    with pytest.raises(ImportRejected, match="already stored with different content"):
        generations_import(project=project, path=path)
    report = generations_import(project=project, path=path, update=True)
    assert report.updated == 1
    assert RawPrompt.objects.get(prompt_id="o0").source == "Other"


def _run(project, **options):
    return curation_run(project=project, options=RunOptions(**options))


def test_funnel_counts_and_recorded_decisions(tmp_path, project):
    prompts = [open_prompt(f"o{i}") for i in range(3)]
    prompts.append(open_prompt("long"))
    prompts[-1]["responses"][0]["text"] = "word " * 40  # model-a far longer than the others
    prompts += [reasoning_prompt(f"r{i}", RIGHT_WRONG) for i in range(4)]
    generations_import(project=project, path=_file(tmp_path, prompts))
    run = _run(project, pairs_per_prompt=3, filters=("length", "correctness"))
    total = run.funnel[-1]
    # 8 prompts x 3 model pairs; "long": the 2 pairs with model-a fail the length filter;
    # reasoning: of the 3 pairs per prompt, the 2 with model-b (13, wrong) are removed.
    assert total == {
        "split": "all",
        "source": "all",
        "in": 24,
        "removed": {"length": 2, "correctness": 8},
        "out": 14,
    }
    assert run.funnel[0]["split"] == "open_ended" and run.funnel[0]["out"] == 10
    assert CandidatePair.objects.filter(project=project, removed_by="").count() == 14
    removed = CandidatePair.objects.filter(removed_by="correctness").first()
    reasons = list(removed.decisions.values_list("filter", "passed"))
    assert reasons == [("length", True), ("correctness", False)]
    reason = removed.decisions.get(filter="correctness").reason
    assert "by answer extractor" in reason and "reference 12" in reason
    # A pair removed by length is not looked at by the next filter.
    for pair in CandidatePair.objects.filter(removed_by="length"):
        assert pair.prompt.prompt_id == "long"
        assert list(pair.decisions.values_list("filter", flat=True)) == ["length"]


def test_runs_are_deterministic_and_replace_the_pairs(tmp_path, project):
    generations_import(project=project, path=_file(tmp_path))

    def snapshot():
        return list(
            CandidatePair.objects.filter(project=project)
            .order_by("position")
            .values_list(
                "prompt__prompt_id",
                "response_a__model",
                "response_b__model",
                "removed_by",
                "external_id",
            )
        )

    filters = ("length", "correctness")
    _run(project, seed=3, same_model=True, filters=filters)
    first = snapshot()
    decisions = list(
        PairDecision.objects.order_by("pair__position", "order").values_list(
            "filter", "passed", "reason"
        )
    )
    _run(project, seed=3, same_model=True, filters=filters)
    assert snapshot() == first
    assert (
        list(
            PairDecision.objects.order_by("pair__position", "order").values_list(
                "filter", "passed", "reason"
            )
        )
        == decisions
    )
    _run(project, seed=4, filters=filters)
    assert snapshot() != first


def test_correctness_flags_in_the_file_win_over_the_extractor(tmp_path, project):
    prompt = reasoning_prompt("r0", {"model-a": "12", "model-b": "13"})
    prompt["responses"][1]["correct"] = True  # the file says 13 is right
    generations_import(project=project, path=_file(tmp_path, [prompt]))
    run = _run(project, pairs_per_prompt=1, filters=("correctness",))
    assert run.funnel[-1]["out"] == 1
    reason = PairDecision.objects.get(filter="correctness").reason
    assert reason == "both answers correct (by flags and answer extractor)"


def test_same_model_pairs_take_the_farthest_samples(tmp_path, project):
    prompt = open_prompt("o0")
    prompt["responses"] = [
        response("model-a", "a red square on white paper", 0),
        response("model-a", "a red square on white paper indeed", 1),
        response("model-a", "completely different words about trains", 2),
        response("model-b", "a red square", 0),
    ]
    generations_import(project=project, path=_file(tmp_path, [prompt]))
    _run(project, pairs_per_prompt=0, same_model=True, filters=())
    pair = CandidatePair.objects.get(kind="same_model")
    assert {pair.response_a.sample_index, pair.response_b.sample_index} in ({0, 2}, {1, 2})
    assert pair.how["method"] == "same_model" and pair.how["embedding"] == "tfidf"
    assert pair.how["cosine_distance"] == pytest.approx(1.0)


def test_ensemble_with_verdicts_in_the_file(tmp_path, project):
    verdicts = [
        {"a": {"model": "model-a"}, "b": {"model": "model-b"}, "judges": ["A", "A", "A"]},
        {"a": {"model": "model-a"}, "b": {"model": "model-c"}, "judges": ["A", "B", "A"]},
        {"a": {"model": "model-c"}, "b": {"model": "model-b"}, "judges": ["B", "B", "B"]},
    ]
    generations_import(
        project=project, path=_file(tmp_path, [open_prompt("o0", verdicts=verdicts)])
    )
    run = _run(project, pairs_per_prompt=3, filters=("ensemble",))
    assert run.funnel[-1]["removed"] == {"ensemble": 2} and run.funnel[-1]["out"] == 1
    kept = CandidatePair.objects.get(removed_by="")
    assert {kept.response_a.model, kept.response_b.model} == {"model-a", "model-c"}
    removed = CandidatePair.objects.filter(removed_by="ensemble")
    for pair in removed:
        decision = pair.decisions.get()
        # Oriented to the pair's own A/B order.
        if (pair.response_a.model, pair.response_b.model) == ("model-b", "model-a"):
            assert decision.reason == "all 3 judges prefer B"
        assert decision.figures["by"] == "verdicts in the file"


def test_ensemble_without_verdicts_names_the_pairs(tmp_path, project):
    generations_import(project=project, path=_file(tmp_path, [open_prompt("o0")]))
    with pytest.raises(CurationError, match=r"2 pairs have none in the file \(o0: "):
        _run(project, filters=("ensemble",))


def test_ensemble_asks_the_judge_runner_in_both_orders(tmp_path, project):
    """A real run of the ensemble filter through the judge runner against a local server.

    The server's judge prefers the longer response and, on equal lengths, whichever it reads
    first: so pairs of unequal length get the same preference from all three judges (dropped),
    and pairs of equal length get orders that disagree, no preference (kept).
    """
    prompt = open_prompt("o0")
    texts = {"model-a": "Equal words here.", "model-b": "Equal words also.", "model-c": "L" * 80}
    prompt["responses"] = [response(m, t) for m, t in texts.items()]
    generations_import(project=project, path=_file(tmp_path, [prompt]))
    with FakeOpenAI() as server:
        for i in range(3):
            judge_config(server.url, name=f"judge-{i}", model=f"fake-vl-{i}")
        judges = ("judge-0", "judge-1", "judge-2")
        run = _run(project, filters=("ensemble",), judges=judges, pairs_per_prompt=3)
        n_pairs = CandidatePair.objects.count()
        assert n_pairs == 3
        assert len(server.requests) == 3 * n_pairs * 2  # judges x pairs x both orders
        assert all(r.body["model"].startswith("fake-vl-") for r in server.requests)
        _run(project, filters=("ensemble",), judges=judges, pairs_per_prompt=3)
        assert len(server.requests) == 3 * n_pairs * 2  # cached: nothing asked again
    for pair in CandidatePair.objects.select_related("response_a", "response_b"):
        equal = len(pair.response_a.text) == len(pair.response_b.text)
        assert (pair.removed_by == "") == equal, (pair.response_a.model, pair.response_b.model)
        decision = pair.decisions.get()
        assert decision.figures["by"] == "judge runner"
        if not equal:
            longer = "A" if len(pair.response_a.text) > len(pair.response_b.text) else "B"
            assert decision.reason == f"all 3 judges prefer {longer}"
    assert run.funnel


def test_judges_without_a_config_are_named(tmp_path, project):
    generations_import(project=project, path=_file(tmp_path, [open_prompt("o0")]))
    with pytest.raises(JudgeConfigMissing, match="No judge config named 'judge-1', 'judge-2'"):
        _run(project, filters=("ensemble",), judges=("judge-1", "judge-2"))
    assert not CandidatePair.objects.exists()


def test_promotion_creates_samples_with_slots_and_provenance_idempotently(tmp_path, project):
    generations_import(project=project, path=_file(tmp_path))
    _run(project, filters=("length", "correctness"))
    kept = CandidatePair.objects.filter(removed_by="").count()
    report = pairs_promote(project=project, calibration_seeds=2)
    assert report.created == kept
    samples = Sample.objects.filter(project=project)
    assert samples.count() == kept and samples.filter(is_seed=True).count() == 2
    assert set(samples.filter(is_seed=True).values_list("split", flat=True)) == {
        "open_ended",
        "reasoning",
    }
    formal = samples.filter(is_seed=False).count()
    assert Slot.objects.filter(sample__project=project).count() == formal * 3
    pair = CandidatePair.objects.filter(removed_by="").select_related("response_a").first()
    sample = Sample.objects.get(project=project, external_id=pair.external_id)
    provenance = sample.metadata["curation"]
    assert provenance["prompt_id"] == pair.prompt.prompt_id
    assert provenance["response_a"] == {
        "model": pair.response_a.model,
        "sample": pair.response_a.sample_index,
    }
    assert provenance["pairing"]["method"] == "cross_model"
    assert set(provenance["filters"]) == set(pair.decisions.values_list("filter", flat=True))
    assert sample.image_sha256 == pair.prompt.image_sha256
    again = pairs_promote(project=project, calibration_seeds=2)
    assert (again.created, again.unchanged) == (0, kept)


def test_promotion_of_a_number_is_stratified(tmp_path, project):
    generations_import(project=project, path=_file(tmp_path))
    _run(project, filters=())
    report = pairs_promote(project=project, count=4, seed=1)
    assert report.created == 4
    splits = sorted(Sample.objects.values_list("split", flat=True))
    assert splits == ["open_ended", "open_ended", "reasoning", "reasoning"]


def test_curate_command_prints_the_funnel_and_promotes(tmp_path, project):
    path = _file(tmp_path)
    out = io.StringIO()
    call_command(
        "curate",
        project.slug,
        str(path),
        "--filters",
        "length,correctness",
        "--promote",
        "3",
        "--seed",
        "5",
        stdout=out,
        stderr=io.StringIO(),
    )
    text = out.getvalue()
    assert "8 prompts with 24 responses read: 8 new, 0 updated, 0 unchanged." in text
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("split · source"))
    assert header.split() == ["split", "·", "source", "in", "-length", "-correctness", "out"]
    total = next(line for line in lines if line.startswith("All"))
    run = CurationRun.objects.get(project=project)
    removed = run.funnel[-1]["removed"]
    assert total.split() == [
        "All",
        "16",
        "0",
        str(removed["correctness"]),
        str(16 - removed["correctness"]),
    ]
    assert removed["correctness"] > 0
    assert "Promoted: 3 samples read (jsonl); 3 created" in text
    assert Sample.objects.filter(project=project).count() == 3


def test_curate_command_refuses_judges_without_a_config(tmp_path, project):
    path = _file(tmp_path, [open_prompt("o0")])
    with pytest.raises(CommandError, match="No judge config named 'a', 'b', 'c'"):
        call_command(
            "curate",
            project.slug,
            str(path),
            "--judges",
            "a,b,c",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )


def test_curate_command_refuses_unknown_filters(tmp_path, project):
    with pytest.raises(CommandError, match="unknown filter"):
        call_command(
            "curate",
            project.slug,
            str(_file(tmp_path)),
            "--filters",
            "length,size",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )


def test_parquet_generations(tmp_path, project):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.annotation.import_data import png_bytes

    rows = [open_prompt(f"o{i}") for i in range(2)]
    for row in rows:
        row["image"] = {"bytes": png_bytes(), "path": None}
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "gen.parquet")
    report = generations_import(project=project, path=tmp_path / "gen.parquet")
    assert report.created == 2 and report.responses == 6
    assert json.loads(json.dumps(RawPrompt.objects.get(prompt_id="o1").verdicts)) == []


def test_curate_command_with_a_bad_file_creates_no_project(tmp_path):
    from annotation.models import Project

    bad = open_prompt("o0")
    del bad["image"]
    path = write_generations(tmp_path, [bad])
    with pytest.raises(CommandError, match="line 1, image: missing field"):
        call_command("curate", "brand-new", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    assert not Project.objects.filter(slug="brand-new").exists()
