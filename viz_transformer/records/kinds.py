"""The one vocabulary of attention kinds (section 3.2.3), used by the library, figures, pages and
the URL (``?kind=cross``): the keys never change, the titles are what a reader sees."""

from __future__ import annotations

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


def parse_head_label(label: str) -> Head:
    """The ``(layer, head)`` of a ``head_label`` (``"L1 H3"`` -> ``(1, 3)``)."""
    layer, head = label.removeprefix("L").split(" H")
    return int(layer), int(head)


def kind_head_label(head: KindHead) -> str:
    """``cross attention L1 H3``: a head with its attention kind."""
    kind, layer, index = head
    return f"{KIND_SHORT[kind]} {head_label((layer, index))}"
