"""The "2017 vs today" table: the architecture summaries of the paper's model, the built-in LLM and
the sidebar's model side by side, each column read from the loaded model
(``LoadedModel.architecture``); the LLM's one-time conversion behind a button."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz_transformer as vt
from viz_transformer.models.hf import smollm2
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.ui import caches, first_load, widgets

PAPER = "paper-en-pt"  # the paper's architecture trained on real language
NOTES = {
    "Normalisation": "Post-LN normalises after each residual add; pre-norm normalises the "
    "sub-layer's input and leaves the residual stream untouched, which keeps deep stacks "
    "trainable without warm-up tricks. RMSNorm drops LayerNorm's mean subtraction and bias.",
    "Positions": "Rotary positions add nothing to the token embedding: each layer rotates every "
    "(q, k) pair of dimensions by an angle proportional to the position, so q·k depends only "
    "on the offset between the two tokens.",
    "Attention heads": "Grouped-query attention keeps all query heads but lets several share "
    "one key/value head: the KV cache, which dominates memory when generating, shrinks by the "
    "group size.",
    "Feed-forward": "SwiGLU multiplies SiLU(x W_gate) by x W_up before W_down: three matrices "
    "instead of two, with a narrower inner width for the same parameter count.",
}


def columns(picked: str) -> list[str]:
    """The models to compare: the paper's, the built-in LLM when installed, the sidebar's."""
    names = [n for n in (PAPER, smollm2.NAME) if n in vt.available_models()]
    return names + ([picked] if picked not in names else [])


def offer_conversion() -> bool:
    """Whether the built-in LLM is ready; otherwise a button that converts it (with progress)."""
    if smollm2.is_converted():
        return True
    st.info(
        f"{smollm2.NAME} is installed as a GGUF file and needs a one-time conversion (about "
        "30 s to 90 s) before its column can be read from the loaded model."
    )
    if st.button(f"Convert {smollm2.NAME} now", key="convert_llm"):
        first_load.prepare(smollm2.NAME)
        st.rerun()
    return False


def summaries(names: list[str]) -> dict[str, ArchitectureSummary]:
    """Each model's summary; a model that cannot load or describe itself gets one message."""
    found = {}
    for name in names:
        if name == smollm2.NAME and not offer_conversion():
            continue
        try:
            found[name] = caches.architecture(name)
        except (ValueError, OSError, RuntimeError) as exc:
            widgets.show_error(f"{name}: {exc}")
    return found


def comparison(found: dict[str, ArchitectureSummary]) -> pd.DataFrame:
    """Aspect rows x model columns of ``ArchitectureSummary.rows``."""
    return pd.DataFrame({name: s.rows() for name, s in found.items()})


def draw(found: dict[str, ArchitectureSummary]) -> None:
    """The table, then what each change does."""
    if not found:
        st.info("No model could be read; pick another one in the sidebar.")
        return
    st.table(comparison(found))
    for aspect, note in NOTES.items():
        st.markdown(f"**{aspect}.** {note}")
