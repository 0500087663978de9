"""The one way heads are named: ``head_label`` and ``parse_head_label`` round-trip, every head
of a grid gets its own label, the one parser also reads what a student types for a head (and
nothing else), and a ``KindHead`` label names the kind first."""

from __future__ import annotations

import pytest

from viz_transformer.records.kinds import (
    KIND_SHORT,
    KINDS,
    head_label,
    kind_head_label,
    parse_head_label,
)


def test_head_labels_round_trip_and_are_distinct() -> None:
    heads = [(layer, head) for layer in range(12) for head in range(12)]
    labels = [head_label(h) for h in heads]
    assert len(set(labels)) == len(heads)  # L1 H11 and L11 H1 stay apart
    assert [parse_head_label(s) for s in labels] == heads
    assert head_label((1, 3)) == "L1 H3"


def test_kind_head_label_names_the_kind_then_the_head() -> None:
    for kind in KINDS:
        assert kind_head_label((kind, 2, 0)) == f"{KIND_SHORT[kind]} L2 H0"


@pytest.mark.parametrize(
    ("text", "head"),
    [("L1 H3", (1, 3)), ("l1h3", (1, 3)), ("L1, H3", (1, 3)), ("layer 1 head 3", (1, 3)),
     ("H3 L1", (1, 3)), ("1 3", (1, 3)), ("(0, 12)", (0, 12)), ("L 2 / H 0", (2, 0)),
     ("L11 H1", (11, 1))],
)  # fmt: skip
def test_a_typed_head_is_read_leniently(text: str, head: tuple[int, int]) -> None:
    assert parse_head_label(text) == head


@pytest.mark.parametrize("text", ["H3", "L1 H3 H4", "three", "1 2 3", "", "L1"])
def test_a_text_that_names_no_head_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="names no head"):
        parse_head_label(text)
