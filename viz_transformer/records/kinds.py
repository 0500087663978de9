"""The one vocabulary of attention kinds (section 3.2.3), used by the library, figures, pages and
the URL (``?kind=cross``): the keys never change, the titles are what a reader sees."""

from __future__ import annotations

import re
from typing import Literal

AttentionKind = Literal["encoder", "decoder", "cross"]
KINDS: tuple[AttentionKind, ...] = ("encoder", "decoder", "cross")
KIND_TITLES: dict[AttentionKind, str] = {  # figure titles, page headings, radio labels
    "encoder": "Encoder self-attention",
    "decoder": "Decoder masked self-attention",
    "cross": "Encoder-decoder (cross) attention",
}
KIND_SHORT: dict[AttentionKind, str] = {  # in lists: "shows encoder self, cross attention"
    "encoder": "encoder self",
    "decoder": "decoder masked self",
    "cross": "cross attention",
}
Head = tuple[int, int]  # (layer, head), both counted from 0, within one attention kind
KindHead = tuple[AttentionKind, int, int]  # (kind, layer, head): a head anywhere in the model
Architecture = Literal["encoder-only", "decoder-only", "encoder-decoder"]
# the architecture a model has, named by the last kind it shows (an encoder-decoder shows cross)
ARCHITECTURES: dict[AttentionKind, Architecture] = {
    "encoder": "encoder-only",
    "decoder": "decoder-only",
    "cross": "encoder-decoder",
}


def architecture_of(kinds: tuple[AttentionKind, ...]) -> Architecture:
    """The architecture of a model that shows ``kinds`` (in ``KINDS`` order): an
    encoder-decoder shows cross-attention even without a decoder self-attention map."""
    return ARCHITECTURES[kinds[-1]]


def head_label(head: Head) -> str:
    """``L1 H3``: a head's layer and index counted from 0, as every page names it."""
    return f"L{head[0]} H{head[1]}"


# "L1 H3", "l1h3", "L1, H3", "layer 1 head 3", "1 3": layer first, each word optional
_LAYER_FIRST = re.compile(
    r"^\s*(?:(?:l|layer)?\s*(?P<a>\d+))\s*[,;:/.\-\s]?\s*(?:(?:h|head)?\s*(?P<b>\d+))\s*$"
)
_HEAD_FIRST = re.compile(  # "H3 L1": both words needed to read the head first
    r"^\s*(?:h|head)\s*(?P<b>\d+)\s*[,;:/.\-\s]?\s*(?:l|layer)\s*(?P<a>\d+)\s*$"
)


def parse_head_label(label: str) -> Head:
    """The ``(layer, head)`` a text names: a ``head_label`` (``"L1 H3"`` -> ``(1, 3)``) or what a
    person types for one ("l1h3", "L1, H3", "layer 1 head 3", "H3 L1", "1 3", "(0, 12)").

    Raises:
        ValueError: a text that names no head that way ("H3", "L1 H3 H4", "three").
    """
    text = label.lower().strip().strip("()[]")
    found = _LAYER_FIRST.match(text) or _HEAD_FIRST.match(text)
    if found is None:
        raise ValueError(f"{label!r} names no head: write it like 'L1 H3' (layer 1, head 3)")
    return int(found["a"]), int(found["b"])


def kind_head_label(head: KindHead) -> str:
    """``cross attention L1 H3``: a head with its attention kind."""
    kind, layer, index = head
    return f"{KIND_SHORT[kind]} {head_label((layer, index))}"
