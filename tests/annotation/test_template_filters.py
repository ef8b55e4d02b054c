"""Template filters that make split keys and LaTeX questions presentable."""

from annotation.templatetags.annotation_tags import split_label, truncate_math


def test_split_label_names_known_splits_and_passes_others_through() -> None:
    assert split_label("open_ended") == "Open-ended"
    assert split_label("reasoning") == "Reasoning"
    assert split_label("other") == "other"
    assert split_label(None) == ""


def test_truncate_math_keeps_short_text_and_never_cuts_a_formula() -> None:
    assert truncate_math("Solve $3$ plus $\\sqrt{8}$.", 90) == "Solve $3$ plus $\\sqrt{8}$."
    # The cut at 20 characters falls inside $\frac{x}{y}$: the formula is dropped whole.
    assert truncate_math("Given $x$ find $\\frac{x}{y}$ now", 20) == "Given $x$ find…"
    assert truncate_math("a  b\n c", 90) == "a b c"
    assert truncate_math("price is 5\\$ and more words here", 12) == "price is 5\\…"


def test_split_names_have_one_home() -> None:
    """The model choices, the template filter and the scoring pages name splits from one dict."""
    from annotation import splits
    from annotation.models import Split
    from judging.selectors import leaderboard as selectors

    assert dict(Split.choices) == splits.LABELS
    assert split_label is splits.split_label is selectors.split_label
