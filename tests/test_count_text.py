"""The one helper for count texts: "1 tie in 1 vote", never "1 ties in 1 votes"."""

from __future__ import annotations

from django.template import Context, Template

from core.text import counted, plural_form


def test_counts_take_the_singular_only_for_exactly_one():
    assert f"{counted(1, 'tie')} in {counted(1, 'vote')}" == "1 tie in 1 vote"
    assert f"{counted(2, 'tie')} in {counted(40, 'vote')}" == "2 ties in 40 votes"
    assert counted(0, "row") == "0 rows"
    assert counted(None, "row") == "0 rows"
    assert counted(1200, "row") == "1,200 rows"
    assert counted(2, "criterion", "criteria") == "2 criteria"
    assert counted(1, "criterion", "criteria") == "1 criterion"
    assert counted(3.0, "run") == "3 runs"
    assert plural_form(1, "entry", "entries") == "entry"


def test_the_template_filter_is_the_same_helper():
    template = Template(
        '{% load annotation_tags %}{{ one|counted:"tie" }} in {{ many|counted:"vote" }}; '
        '{{ many|counted:"criterion,criteria" }}'
    )
    assert template.render(Context({"one": 1, "many": 2})) == "1 tie in 2 votes; 2 criteria"
