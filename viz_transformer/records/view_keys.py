"""The URL keys a shared view lives in (``?sentence=...&kind=cross&layer=1``) and how each is
read from its text: one vocabulary for the app's session state (``ui.state``) and for the views
that lesson files name (``course``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from viz_transformer.records.retrieval_ref import run_key

MODEL_KEY, TEXT_KEY, PRESENTER_KEY = "model", "sentence", "presenter"


def flag(value: str) -> bool:
    """``"True"`` or ``"False"`` as the URL writes a boolean.

    Raises:
        ValueError: any other text.
    """
    if value not in ("True", "False"):
        raise ValueError(value)
    return value == "True"


# URL key -> how to read it; the pages use these keys for their widgets
URL_KEYS: dict[str, Callable[[str], Any]] = {
    MODEL_KEY: str,
    TEXT_KEY: str,
    "kind": str,
    "layer": int,
    "head": int,
    "step": int,
    PRESENTER_KEY: flag,
    "attn_tab": str,
    "hide_special": flag,
    "agg": str,
    "token": int,
    "beam": int,
    "top_k": int,
    "max_steps": int,
    "dec_layer": int,
    "target": str,
    "sentence_part": int,
    "weighting": str,
    "heads_kind": str,
    "heads_mode": str,
    "heads_layer": int,
    "heads_head": int,
    "cmp_mode": str,
    "cmp_a": str,
    "cmp_b": str,
    "cmp_kind": str,
    "cmp_text": str,
    "cmp_pair": int,
    "cmp_sentence": int,
    "cmp_run": str,
    "cmp_head": int,
    "why_query": int,
    "why_key": int,
    "writes_position": int,
    "lesson_back": str,
    "corpus_source": str,
    "corpus_stat": str,
    "corpus_head": str,
    "zoom": flag,  # Attention maps' full-resolution window on a long map
    "zoom_q": int,
    "zoom_k": int,
    "zoom_size": int,
    "ret_run": run_key,  # a retrieval run shown instead of the sentence (records.retrieval_ref)
}
