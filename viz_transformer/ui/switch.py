"""When a model lacks what a page shows: say why, and offer the nearest model that has it with a
button that switches to it."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

import viz_transformer as vt
from viz_transformer.models.registry import nearest_model
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.ui import callbacks


def offer_switch(
    message: str, name: str, wanted: Callable[[vt.ModelSpec], bool], what: str
) -> None:
    """``message`` (why ``name`` has no ``what``), the nearest model that has it and a button
    that switches to it, keeping the sentence when that model can read it."""
    other = nearest_model(name, wanted)
    if other is None:
        st.info(message)
        return
    st.info(f"{message} Nearest model with {what}: **{other}**.")
    switch_button(other, what)


def switch_button(other: str, what: str) -> None:
    """A button that makes ``other`` the sidebar's model (the sentence kept when ``other`` can
    read it); ``what`` it is offered for names the widget."""
    st.button(
        f"Switch to {other}",
        icon=":material/swap_horiz:",
        on_click=callbacks.switch_model,
        args=(other,),
        key=f"switch-{what}-{other}",
    )


def offer_kind(name: str, kind: AttentionKind, message: str) -> None:
    """``offer_switch`` for a missing attention kind."""
    title = KIND_TITLES[kind].lower()
    offer_switch(message, name, lambda spec: kind in spec.shows, title)


def show_missing(trace: vt.Trace, what: str) -> None:
    """Say for each attention kind without a map why: "No <kind> <what>: <why>", with a button
    to the nearest model that has one; a model that has several of them is offered once, in
    one message (a decoder-only model lacks encoder and cross-attention alike)."""
    offers: dict[str | None, list[AttentionKind]] = {}
    for kind in trace.notes:
        other = nearest_model(trace.model_name, lambda spec, kind=kind: kind in spec.shows)
        offers.setdefault(other, []).append(kind)
    for other, kinds in offers.items():
        message = " ".join(f"No {KIND_TITLES[k].lower()} {what}: {trace.notes[k]}" for k in kinds)
        if other is None or len(kinds) == 1:
            offer_kind(trace.model_name, kinds[0], message)
            continue
        titles = " and ".join(KIND_TITLES[k].lower() for k in kinds)
        offer_switch(
            message,
            trace.model_name,
            lambda spec, kinds=kinds: set(kinds) <= set(spec.shows),
            titles,
        )
