"""``RunRef``, a retrieval run named in a URL (``ret_run``): its key reads back to the same run,
whatever the needle and question hold, and a value that is not a run's key is refused (the URL
reader then ignores it)."""

from __future__ import annotations

import pytest

from viz_transformer.records.retrieval_ref import RunRef, parse
from viz_transformer.records.view_keys import URL_KEYS


@pytest.mark.parametrize(
    "ref",
    [
        RunRef("b:haystack-harbour-town", 0.5, 0, "copy", "The best thing | to do."),
        RunRef("h:0123456789abcdef", 0.25, 4096, "copy", "zeta eta theta"),
        RunRef("b:x", 1.0, 512, "question", "a | b c", "What is | it? 100%"),
    ],
)
def test_a_key_reads_back_to_its_run(ref: RunRef) -> None:
    assert parse(ref.key) == ref
    assert URL_KEYS["ret_run"](ref.key) == ref.key


@pytest.mark.parametrize(
    "value",
    [
        "x|0.5|0|copy|a b",  # no b: or h:
        "h:0123|0.5|0|copy|a b",  # a short digest
        "b:x|1.5|0|copy|a b",  # depth past 1
        "b:x|0.5|-1|copy|a b",
        "b:x|0.5|0|question|a b",  # a question form without its question
        "b:x|0.5|0|copy:why|a b",  # a question in the copy form
        "b:x|0.5|0|copy|  ",
        "b:x|0.5|0|copy",
    ],
)
def test_a_value_that_is_no_run_is_refused(value: str) -> None:
    with pytest.raises(ValueError):
        URL_KEYS["ret_run"](value)


def test_the_run_in_words() -> None:
    ref = RunRef("b:haystack-harbour-town", 0.5, 1024, "question", "a b", "Why?")
    assert ref.describe() == (
        "needle at depth 0.5 of haystack-harbour-town, cut to 1,024 tokens, asked 'Why?'"
    )
