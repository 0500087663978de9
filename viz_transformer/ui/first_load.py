"""The one-time work before a model's first load (the built-in LLM's GGUF conversion, about 30 s),
shown as a progress bar instead of a silent spinner."""

from __future__ import annotations

import streamlit as st

import viz_transformer as vt


def prepare(name: str) -> None:
    """Convert ``name`` now if it needs it, with a progress bar; nothing when it is ready.

    A failure is shown as one message; the page then goes on, and loading the model says why it
    cannot be used, while the other models keep working.
    """
    bar = None

    def report(fraction: float, text: str) -> None:
        nonlocal bar
        if bar is None:
            bar = st.progress(0.0, text=f"First use of {name}: {text}")
        bar.progress(min(max(fraction, 0.0), 1.0), text=f"First use of {name}: {text}")

    try:
        vt.prepare_model(name, report)
    except ValueError as exc:
        st.error(str(exc))
    finally:
        if bar is not None:
            bar.empty()
