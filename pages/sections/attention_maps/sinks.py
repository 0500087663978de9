"""The attention-maps page's section on modern attention: what grouped-query attention saves, and
attention sinks (each head's mass on the first token, and the chosen head with it hidden)."""

from __future__ import annotations

import streamlit as st

from viz_transformer.analysis.sinks import RENORMALISED, top_sinks
from viz_transformer.figures import sinks as sink_figs
from viz_transformer.records.export import trace_meta
from viz_transformer.records.kinds import AttentionKind, head_label
from viz_transformer.records.trace import Trace
from viz_transformer.ui import caches, widgets

SINKS = (
    "Attention sinks (Xiao et al. 2023): many heads of large language models park most of their "
    "weight on the first token when nothing else is worth reading; softmax must put its weight "
    "somewhere (rows sum to 1)."
)


def gqa_line(name: str, kind: AttentionKind) -> None:
    """One line under the overview: query heads per K/V head and the KV-cache bytes it saves."""
    if kind != "decoder":
        return
    try:
        arch = caches.architecture(name)
    except widgets.LOAD_ERRORS:
        return  # the model does not describe itself; the maps still stand
    if arch.attention == "MHA" or arch.kv_bytes_per_token is None:
        return
    group = arch.heads // arch.kv_heads
    st.caption(
        f"{arch.attention}: {arch.heads} query heads share {arch.kv_heads} K/V heads, {group} "
        f"each (columns grouped above). The KV cache grows by {arch.kv_bytes_per_token:,} bytes "
        f"per token ({arch.dtype}) instead of {arch.mha_kv_bytes_per_token:,} with one K/V head "
        f"per query head: {group}x less."
    )


def section(name: str, text: str, trace: Trace, kind: AttentionKind, layer: int, head: int) -> None:
    """Attention sinks of ``kind`` in ``name``'s trace of ``text``: on request, the layers x heads
    map of the first token's share, then ``head``'s map at ``layer`` without the first key,
    its rows renormalised."""
    n_keys = trace.get(kind).shape[3]
    if n_keys < 2 or not st.toggle(
        "Attention sinks: how much each head gives the first token", key="sinks"
    ):
        return
    st.caption(SINKS)
    try:
        mass = caches.sink_mass(name, text, kind)
        kv_of = caches.model(name).kv_groups(kind)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    first = trace.tokens_for(kind)[1][0]
    widgets.chart(sink_figs.sink_map_figure(mass, kind, first, kv_of), f"{kind}-sinks")
    tops = ", ".join(f"{head_label((la, h))} {m:.2f}" for la, h, m in top_sinks(mass))
    st.caption(f"Largest: {tops}. A uniform head would give about {1 / n_keys:.2f}.")
    meta = {**trace_meta(trace), "kind": kind}
    widgets.downloads(f"sinks-{kind}", {f"{kind}_first_token_mass": mass}, meta)
    if st.toggle(f"Hide the first token in head {head}'s map ({RENORMALISED})", key="no_sink"):
        fig = sink_figs.without_first_figure(trace, kind, layer, head)
        widgets.chart(fig, f"{kind}-L{layer}-H{head}-no-first")
