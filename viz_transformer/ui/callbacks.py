"""Callbacks that change the shared view: pick a model (one of the list, a typed Hugging Face
id, or the nearest model that has what a page shows) and set the sidebar's sentence."""

from __future__ import annotations

import streamlit as st

import viz_transformer as vt
from viz_transformer.ui import caches
from viz_transformer.ui.state import EXTRA_KEY, HF_ERROR_KEY, HF_KEY, MODEL_KEY, SHOWN_KEY, TEXT_KEY


def remember_model(name: str) -> None:
    """Offer ``name`` (an added Hugging Face model) in this session's model list."""
    extra = st.session_state.setdefault(EXTRA_KEY, [])
    if name not in extra and name not in vt.available_models():
        extra.append(name)


def on_model_change() -> None:
    """Swap in the new model's example if the sentence was still the previous model's example."""
    previous = st.session_state.get(SHOWN_KEY)
    new = st.session_state[MODEL_KEY]
    if previous and st.session_state.get(TEXT_KEY) == caches.spec(previous).example:
        st.session_state[TEXT_KEY] = caches.spec(new).example
    st.session_state[SHOWN_KEY] = new


def pick_model(name: str) -> None:
    """Callback: select ``name`` in the sidebar's model picker (a teacher's or student's link)."""
    st.session_state[MODEL_KEY] = name
    on_model_change()


def add_hf_model() -> None:
    """Check the typed Hugging Face id (offline first) and select it, or leave a message."""
    ident = st.session_state.get(HF_KEY, "").strip()
    st.session_state.pop(HF_ERROR_KEY, None)
    if not ident:
        return
    name = ident if ident.startswith("hf:") else f"hf:{ident}"
    try:
        spec = caches.spec(name)
    except (ValueError, OSError) as exc:
        st.session_state[HF_ERROR_KEY] = str(exc)
        return
    remember_model(spec.name)
    st.session_state[MODEL_KEY] = spec.name
    on_model_change()


def switch_model(new: str) -> None:
    """Callback of a "Switch to" button: select ``new``, keeping the sentence when the new model
    can take it (``LoadedModel.accepts``), else giving it the new model's example."""
    text = st.session_state.get(TEXT_KEY, "")
    try:
        keeps = caches.model(new).accepts(text)
    except (ValueError, RuntimeError, OSError):
        keeps = False  # the page will say why the model cannot load
    st.session_state[MODEL_KEY] = new
    st.session_state[SHOWN_KEY] = new
    if not keeps:
        st.session_state[TEXT_KEY] = caches.spec(new).example


def use_text(text: str) -> None:
    """Callback: ``text`` (the model's example) becomes the sidebar's sentence."""
    st.session_state[TEXT_KEY] = text


def use_line(lines: tuple[str, ...], key: str) -> None:
    """Callback of a line picker keyed ``key``: the chosen line becomes the sidebar's sentence."""
    index = st.session_state.get(key)
    if index is not None and index < len(lines):
        st.session_state[TEXT_KEY] = lines[index]
