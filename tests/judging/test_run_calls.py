"""The call inspector of a judge runner run: each row's calls as the judge answered them, the
filters (parse method, criterion, question id), the pages, who may open it, and its queries."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from annotation.services.projects import member_add, project_create
from judging.models import JudgeCall, JudgeRun, Prediction
from judging.runner.run import judge_run_execute, shown_output
from judging.services.scoring import judge_run_upload
from tests.judging.fake_openai import FakeOpenAI, default_answer
from tests.judging.runner_data import LONG, SHORT, judge_config, runner_version
from tests.judging.web_data import prediction_lines, predictions_file, version_from_records

pytestmark = pytest.mark.django_db

PREAMBLE = "Let me look at the image closely. " * 400  # 3,400 tokens: past any budget below
#: What the mixed judge does on each row of RUNNER_ROWS (in both orders).
MIXED = {
    "p1__completeness": "direct",
    "p1__hallucination": "direct",
    "p2__completeness": "truncated",
    "p2__hallucination": "truncated",
    "p3__completeness": "verifier",
    "p3__hallucination": "unparsed",
}


def mixed_answer(text: str) -> str:
    """p1 answered plainly, p2 rambles past the budget, p3 never says its verdict; the verifier
    reads "the second one" and gives up on "cannot tell"."""
    if "[End of the assessment]" in text:
        return "none" if "cannot tell" in text else default_answer(text)
    if "image p2" in text:
        return PREAMBLE + default_answer(text)
    if "image p3" in text:
        if "hallucination" in text.lower():
            return "I cannot tell which one is better."
        return "Both responses have merits; I prefer the second one overall."
    return default_answer(text)


@pytest.fixture
def version(project):
    return runner_version(project, image_size=(64, 64))


@pytest.fixture
def mixed_run(version, lead) -> JudgeRun:
    """A both-orders run of a thinking judge (600 tokens of thinking, a 1,200-token budget)
    whose rows are read directly, cut at the budget, read by the verifier or left unparsed."""
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=600, answer=mixed_answer) as s:
        verifier = judge_config(s.url, name="verifier", model="verifier-model", api_style="vllm")
        config = judge_config(
            s.url,
            api_style="vllm",
            orders="both",
            max_tokens=1200,
            retry_max_tokens=None,
            verifier=verifier,
        )
        judge_run_execute(version=version, config=config, by=lead)
    return JudgeRun.objects.get(version=version, judge="fake-judge")


def calls_url(run: JudgeRun, **query) -> str:
    version = run.version
    url = reverse("judge-run-calls", args=[version.project.slug, version.number, run.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


class CallTable(HTMLParser):
    """The inspector's table read back: per row (question id) its call rows' cells by order,
    and the option labels of the parse method filter."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, list[str]]] = {}
        self.methods: dict[str, str] = {}  # option value -> label
        self._question = ""
        self._order: str | None = None
        self._cell: list[str] | None = None
        self._option: str | None = None
        self._in_method = False
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tbody" and "data-question" in attrs:
            self._question = attrs["data-question"]
            self.rows[self._question] = {}
        elif tag == "tr" and "data-order" in attrs:
            self._order = attrs["data-order"]
            self.rows[self._question][self._order] = []
        elif tag in ("td", "th") and self._order is not None:
            self._cell = []
        elif tag == "select":
            self._in_method = attrs.get("name") == "method"
        elif tag == "option" and self._in_method:
            self._option, self._text = attrs.get("value", ""), []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            text = " ".join("".join(self._cell).split())
            self.rows[self._question][self._order].append(text)
            self._cell = None
        elif tag == "tr":
            self._order = None
        elif tag == "option" and self._option is not None:
            self.methods[self._option] = "".join(self._text).strip()
            self._option = None
        elif tag == "select":
            self._in_method = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._option is not None:
            self._text.append(data)


def read(client, url: str) -> tuple[CallTable, str]:
    response = client.get(url)
    assert response.status_code == 200
    page = response.content.decode()
    table = CallTable()
    table.feed(page)
    return table, page


def call_cells(call: JudgeCall) -> list[str]:
    """The eight cells of a call's row: order, parse, verdict, finish, tokens, latency, server,
    attempts."""
    tokens = f"{call.prompt_tokens:,} / {call.completion_tokens:,}"
    if call.reasoning_tokens:
        tokens += f" ({call.reasoning_tokens:,} thinking)"
    return [
        {"ab": "A/B", "ba": "B/A"}[call.order],
        call.parse_method,
        {"model_a": "A", "model_b": "B"}.get(call.verdict, "—"),
        call.finish_reason or "—",
        tokens,
        f"{call.latency_ms:,} ms",
        call.base_url.removeprefix("http://"),
        str(call.attempts),
    ]


def test_every_call_of_every_row_is_shown(client, lead, mixed_run):
    client.force_login(lead)
    table, page = read(client, calls_url(mixed_run))
    predictions = list(mixed_run.predictions.order_by("pk"))
    assert list(table.rows) == [p.question_id for p in predictions] == list(MIXED)
    calls = {c.key: c for c in JudgeCall.objects.all()}
    for prediction in predictions:
        shown = table.rows[prediction.question_id]
        keys = prediction.call_keys
        assert [calls[k].order for k in keys] == ["ab", "ba"]
        for key in keys:
            call = calls[key]
            assert call.parse_method == MIXED[prediction.question_id]
            assert shown[call.order][-8:] == call_cells(call)
        first = shown["ab"][:3]
        assert first[0] == prediction.question_id
        assert first[1] == prediction.question_id.split("__")[1]
        verdict = {"model_a": "A", "model_b": "B"}.get(prediction.prediction, "invalid")
        assert first[2] == verdict
    # The server's full address is the server cell's title.
    assert f'<code class="url" title="{next(iter(calls.values())).base_url}">' in page
    # The thinking judge: 600 tokens of thinking on each call, cut to 2,000 characters.
    direct = calls[predictions[0].call_keys[0]]
    assert len(direct.reasoning_output) == 2400 and direct.reasoning_output not in page
    assert html.escape(shown_output(direct.reasoning_output), quote=False) in page
    assert "… (400 more characters)" in page
    assert html.escape(direct.raw_output, quote=False) in page
    # The answer cut at the budget: its text before the cut, and "length".
    cut = calls[predictions[2].call_keys[0]]
    assert cut.finish_reason == "length" and cut.raw_output.startswith("Let me look")
    assert html.escape(shown_output(cut.raw_output), quote=False) in page
    # The verifier's answers: "2" for one row, "none" (left unparsed) for the other.
    assert {calls[k].verifier_output for k in predictions[4].call_keys} == {"2"}
    assert {calls[k].verifier_output for k in predictions[5].call_keys} == {"none"}
    assert page.count("The verifier's answer") == 4


def test_the_parse_method_filter_counts_rows(client, lead, mixed_run):
    client.force_login(lead)
    table, _ = read(client, calls_url(mixed_run))
    assert table.methods == {
        "": "Any (6)",
        "direct": "Direct (2)",
        "verifier": "Verifier (1)",
        "unparsed": "Unparsed (1)",
        "truncated": "Truncated (2)",
        "failed": "Failed (0)",
    }


@pytest.mark.parametrize(
    ("query", "rows"),
    [
        ({"method": "truncated"}, ["p2__completeness", "p2__hallucination"]),
        ({"method": "direct"}, ["p1__completeness", "p1__hallucination"]),
        ({"method": "unparsed"}, ["p3__hallucination"]),
        ({"method": "failed"}, []),
        (
            {"criterion": "hallucination"},
            ["p1__hallucination", "p2__hallucination", "p3__hallucination"],
        ),
        ({"criterion": "completeness", "method": "truncated"}, ["p2__completeness"]),
        ({"q": "p3"}, ["p3__completeness", "p3__hallucination"]),
        ({"q": "P1__COMP"}, ["p1__completeness"]),
        ({"q": "p1", "method": "truncated"}, []),
    ],
)
def test_the_filters_narrow_the_rows(client, lead, mixed_run, query, rows):
    client.force_login(lead)
    table, page = read(client, calls_url(mixed_run, **query))
    assert list(table.rows) == rows
    if not rows:
        assert "No row of this run matches the filters." in page


def test_the_counts_follow_the_criterion_and_search(client, lead, mixed_run):
    client.force_login(lead)
    table, _ = read(client, calls_url(mixed_run, criterion="completeness"))
    assert table.methods[""] == "Any (3)"
    assert (table.methods["direct"], table.methods["truncated"]) == ("Direct (1)", "Truncated (1)")
    assert (table.methods["verifier"], table.methods["unparsed"]) == (
        "Verifier (1)",
        "Unparsed (0)",
    )
    table, _ = read(client, calls_url(mixed_run, q="p2", method="truncated"))
    assert table.methods[""] == "Any (2)" and table.methods["truncated"] == "Truncated (2)"


@pytest.mark.parametrize(
    "query",
    [
        {"method": "bogus"},
        {"criterion": "no-such-criterion"},
        {"page": "abc"},
        {"page": "0"},
        {"page": "99"},
        {"method": "", "criterion": "", "q": ""},
        {"q": "x" * 400},
    ],
)
def test_a_bad_filter_value_falls_back_to_every_row(client, lead, mixed_run, query):
    client.force_login(lead)
    table, page = read(client, calls_url(mixed_run, **query))
    assert list(table.rows) == list(MIXED)
    assert " selected" not in page.split('name="criterion"')[0].split('name="method"')[1]
    assert "Clear the filters" not in page


def test_a_bad_value_drops_only_itself(client, lead, mixed_run):
    client.force_login(lead)
    table, _ = read(client, calls_url(mixed_run, method="bogus", criterion="hallucination"))
    assert list(table.rows) == ["p1__hallucination", "p2__hallucination", "p3__hallucination"]


def test_a_run_cut_at_the_budget_is_all_truncated(client, lead, version):
    with FakeOpenAI(provider="vllm-thinking", thinking_tokens=600) as server:
        config = judge_config(server.url, orders="both", max_tokens=300, retry_max_tokens=None)
        judge_run_execute(version=version, config=config, by=lead)
    run = JudgeRun.objects.get(version=version)
    client.force_login(lead)
    table, page = read(client, calls_url(run, method="truncated"))
    assert list(table.rows) == list(MIXED)
    assert table.methods["truncated"] == "Truncated (6)" and table.methods["direct"] == "Direct (0)"
    for row in table.rows.values():
        for order in ("ab", "ba"):
            assert row[order][-7:-4] == ["truncated", "—", "length"]
    # The thinking cut by the budget (300 tokens: 1,200 characters), the answer empty.
    call = JudgeCall.objects.first()
    assert call.raw_output == "" and len(call.reasoning_output) == 1200
    assert html.escape(call.reasoning_output, quote=False) in page
    assert "(empty)" in page
    table, page = read(client, calls_url(run, method="direct"))
    assert table.rows == {} and "No row of this run matches the filters." in page


@pytest.fixture
def many_run(lead) -> JudgeRun:
    """A run of 56 rows (28 prompts, two criteria), A/B only, in a project of its own."""
    project = project_create(name="Many rows", slug="many-rows")
    rows = [
        (f"p{i:02}", criterion, LONG, SHORT, "model_a")
        for i in range(28)
        for criterion in ("completeness", "hallucination")
    ]
    version = runner_version(project, rows, image_size=(64, 64))
    with FakeOpenAI() as server:
        config = judge_config(server.url, name="many-judge")
        judge_run_execute(version=version, config=config, by=lead)
    return JudgeRun.objects.get(version=version)


def test_fifty_rows_a_page(client, lead, many_run):
    client.force_login(lead)
    ids = list(many_run.predictions.order_by("pk").values_list("question_id", flat=True))
    table, page = read(client, calls_url(many_run))
    assert list(table.rows) == ids[:50]
    assert "56 rows · page 1 of 2" in page
    assert 'href="' + html.escape(calls_url(many_run, page=2)) + '" rel="next"' in page
    table, page = read(client, calls_url(many_run, page=2))
    assert list(table.rows) == ids[50:]
    assert 'href="' + html.escape(calls_url(many_run, page=1)) + '" rel="prev"' in page
    # The links keep the filters.
    table, page = read(client, calls_url(many_run, method="direct", q="p", page=2))
    assert list(table.rows) == ids[50:]
    assert html.escape(calls_url(many_run, method="direct", q="p", page=1)) in page
    table, page = read(client, calls_url(many_run, criterion="hallucination"))
    assert list(table.rows) == ids[1::2] and 'rel="next"' not in page


def test_the_queries_do_not_grow_with_the_rows(
    client, lead, mixed_run, many_run, django_assert_max_num_queries
):
    """12: the session, the user, the project, the version (and its files), the run, its
    criteria and their names, the rows' call keys, their calls' parse methods, then the page's
    predictions and their calls, whether the run has 6 rows or 56."""
    client.force_login(lead)
    for run in (mixed_run, many_run):
        for query in ({}, {"method": "direct", "criterion": "completeness", "q": "p", "page": 1}):
            url = calls_url(run, **query)
            with django_assert_max_num_queries(12):
                response = client.get(url)
            table = CallTable()
            table.feed(response.content.decode())
            assert table.rows


def test_only_a_runner_run_of_this_version_opens(client, lead, mixed_run, project, many_run):
    client.force_login(lead)
    version = mixed_run.version
    upload = JudgeRun.objects.create(version=version, judge="uploaded")
    assert upload.source == JudgeRun.Source.UPLOAD
    assert client.get(calls_url(upload)).status_code == 404
    # A runner run of version 2, or of another project, asked for under version 1.
    second = version_from_records(project, [], number=2)
    of_v2 = JudgeRun.objects.create(version=second, judge="j", source=JudgeRun.Source.RUNNER)
    for run in (of_v2, many_run):
        url = reverse("judge-run-calls", args=[project.slug, version.number, run.pk])
        assert client.get(url).status_code == 404
    assert client.get(calls_url(of_v2)).status_code == 200
    missing = calls_url(mixed_run).replace(project.slug, "no-such-project")
    assert client.get(missing).status_code == 404
    assert client.get(calls_url(mixed_run)).status_code == 200


def test_only_the_lead_opens_it(client, mixed_run, annotator, outsider, project):
    member_add(project=project, user=annotator)
    url = calls_url(mixed_run)
    assert client.get(url)["Location"].startswith("/accounts/login/")
    for user in (annotator, outsider):
        client.force_login(user)
        assert client.get(url).status_code == 403


def test_a_row_without_its_calls_says_so(client, lead, mixed_run):
    first, second = mixed_run.predictions.order_by("pk")[:2]
    Prediction.objects.filter(pk=first.pk).update(call_keys=[])
    JudgeCall.objects.filter(key=second.call_keys[1]).delete()
    client.force_login(lead)
    table, page = read(client, calls_url(mixed_run))
    assert table.rows[first.question_id] == {}
    assert "No call recorded" in page
    assert list(table.rows[second.question_id]) == ["ab"]
    assert "1 call no longer stored" in page
    Prediction.objects.filter(run=mixed_run).update(call_keys=[])
    _, page = read(client, calls_url(mixed_run))
    assert "made before the runner recorded which calls" in page


def test_the_scorecard_links_the_calls_of_runner_runs(client, lead, mixed_run):
    version = mixed_run.version
    lines = prediction_lines(dict.fromkeys(MIXED, "model_a"))
    judge_run_upload(version=version, judge="fake-judge", file=predictions_file(lines), by=lead)
    uploaded = JudgeRun.objects.get(version=version, source=JudgeRun.Source.UPLOAD)
    client.force_login(lead)
    url = reverse("scorecard", args=[version.project.slug, version.number, "fake-judge"])
    page = client.get(url).content.decode()
    links = re.findall(r'href="([^"]+/calls/)"', page)
    assert links == [calls_url(mixed_run)]
    assert calls_url(uploaded) not in page
