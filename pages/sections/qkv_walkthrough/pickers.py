"""The Q, K, V walkthrough's pickers (pages/qkv_walkthrough.py), private to it: layer and head
first, then the capture of that one layer (``qkv_caches.capture``, refused with a message where
it would not fit), then the query token among the capture's positions."""

from __future__ import annotations

import streamlit as st

from viz_transformer.analysis import walkthrough
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.ui import caches, qkv_caches, state, widgets


def pickers(
    name: str, text: str, kind: AttentionKind, preds: tuple[str, ...]
) -> tuple[int, int, int, walkthrough.KindCapture]:
    """Layer and head, then the capture of that layer alone, then the query token; returns
    (position, layer, head, capture)."""
    n_layers, n_heads = caches.model(name).facts.shape(kind)
    state.clamp_state(layer=n_layers, head=n_heads)
    col_token, col_layer, col_head = st.columns(3)
    layer = col_layer.selectbox("Layer", range(n_layers), key="layer")
    head = col_head.selectbox("Head", range(n_heads), key="head")
    try:
        cap = qkv_caches.capture(name, text, kind, layer)  # that layer alone
    except ValueError as exc:  # a model without our hook points says why
        st.info(str(exc))
        st.stop()
    except RuntimeError as exc:
        widgets.show_error(exc)
        st.stop()
    tokens = cap.query_tokens
    preds = preds if len(preds) == len(tokens) else ()
    state.keep_choice("token", range(len(tokens)), min(1, len(tokens) - 1))  # 0 is often <s>
    position = col_token.selectbox(
        "Query token",
        range(len(tokens)),
        format_func=lambda i: f"{i}: {tokens[i]}" + (f" (predicts {preds[i]})" if preds else ""),
        key="token",
    )
    return position, layer, head, cap
