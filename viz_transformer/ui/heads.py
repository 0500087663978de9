"""Sections of the "What heads do" page: importance, one head up close, a set of heads ablated,
head roles, activation patching and the logit lens."""

from __future__ import annotations

import numpy as np
import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis.roles import ROLES
from viz_transformer.figures import heads as figures
from viz_transformer.figures.heatmap import heatmap
from viz_transformer.records.kinds import KIND_SHORT, AttentionKind
from viz_transformer.ui import caches, widgets

# a clean / corrupted pair of equal token length whose outputs differ, per model
PATCH_PAIRS = {
    "bergamot-en-pt": ("The cat is black.", "The dog is black."),
    "bergamot-pt-en": ("O gato é preto.", "O cão é preto."),
    "paper-en-pt": ("The cat is black.", "The dog is black."),
    "paper-reverse": ("happy king red ship", "happy king blue ship"),
}


def head_label(layer: int, head: int) -> str:
    return f"L{layer} H{head}"


STOP_KEY = "_heads_stopped"  # the (model, text, kind, mode) whose importance job was stopped


class Stopped(Exception):
    """Raised from the progress callback once the user pressed Stop."""


def _stop(key: tuple[str, str, str, str]) -> None:
    st.session_state[STOP_KEY] = key


def _resume() -> None:
    st.session_state.pop(STOP_KEY, None)


def importance(name: str, text: str, kind: AttentionKind, mode: str) -> np.ndarray | None:
    """The importance map, computed with a progress bar and a Stop button the first time; None
    after a message (an error, or a stopped job with a button to start it again).

    Pressing Stop reruns the page (Streamlit interrupts the running job at its next progress
    update); the rerun finds the job's key in ``STOP_KEY`` and does not start it again."""
    store, key = caches.head_importance_store(), (name, text, kind, mode)
    if key not in store and st.session_state.get(STOP_KEY) == key:
        st.info("Importance stopped. A large model ablates hundreds of heads; start it again?")
        st.button("Compute importance", key="heads_resume", on_click=_resume)
        return None
    if key not in store:
        stop = st.empty()
        stop.button("Stop", key="heads_stop", on_click=_stop, args=(key,))
        bar = st.progress(0.0, text="Ablating every head, one per batch row…")

        def progress(done: float) -> None:
            if st.session_state.get(STOP_KEY) == key:
                raise Stopped
            bar.progress(done, text=f"Ablating every head, one per batch row… {done:.0%}")

        try:
            store.put(key, vt.head_importance(caches.model(name), text, kind, None, mode, progress))
        except Stopped:
            return None
        except widgets.LOAD_ERRORS as exc:
            widgets.show_error(exc)
            return None
        finally:
            bar.empty()
            stop.empty()
    scores = store[key]
    widgets.chart(
        figures.head_grid(
            scores,
            f"Importance of each {KIND_SHORT[kind]} head, ablated alone",
            "nats lost",
            diverging=True,
            subtitle="drop in log p(output); heads that back each other up all score near 0",
        ),
        "head-importance",
    )
    st.caption(
        "A head ablated **alone** can look unimportant while a set of such heads is essential "
        "(redundancy): test sets below. Negative: the output got more likely without the head."
    )
    return scores


def one_head(name: str, text: str, kind: AttentionKind, shape: tuple[int, int], mode: str) -> None:
    """A chosen head: its weights, its value-weighted map, and the output without it."""
    left, right = st.columns(2)
    layer = left.selectbox("Layer", range(shape[0]), key="heads_layer")
    head = right.selectbox("Head", range(shape[1]), key="heads_head")
    tr = caches.trace(name, text)
    rows, cols = tr.tokens_for(kind)
    weights = np.asarray(tr.get(kind)[layer, head])
    weighted = caches.value_weighted(name, text, kind)[layer, head]
    a, b = st.columns(2)
    with a:
        widgets.chart(
            heatmap(
                weights, list(rows), list(cols), f"{head_label(layer, head)}: weights α", "query"
            ),
            "head-weights",
        )
    with b:
        title = f"{head_label(layer, head)}: ‖α f(x)‖, weighted by value norm"
        widgets.chart(heatmap(weighted, list(rows), list(cols), title, "query"), "head-weighted")
    st.caption(
        "Right: Kobayashi et al. (2020) norm ‖α_ij · v_j W^O_h‖, what key j really adds to "
        "query i through this head. A large weight on a token with a small value moves nothing."
    )
    compare_outputs(name, text, ((kind, layer, head),), mode)


def compare_outputs(
    name: str, text: str, heads: tuple[tuple[AttentionKind, int, int], ...], mode: str
) -> None:
    """The normal output beside the output with ``heads`` ablated (greedy decoding reruns)."""
    normal = caches.trace(name, text)
    try:
        ablated = caches.ablated_trace(name, text, heads, mode)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    a, b = st.columns(2)
    a.markdown(f"**Normal output**\n\n{widgets.literal(normal.output_text) or '(none)'}")
    changed = "same" if ablated.output_text == normal.output_text else "**changed**"
    b.markdown(
        f"**With {len(heads)} head(s) ablated ({mode})** ({changed})\n\n"
        f"{widgets.literal(ablated.output_text) or '(none)'}"
    )


def head_set(name: str, text: str, kind: AttentionKind, shape: tuple[int, int], mode: str) -> None:
    """Ablate a chosen set of heads together, to see redundancy."""
    options = [head_label(layer, h) for layer in range(shape[0]) for h in range(shape[1])]
    chosen = st.multiselect("Heads to ablate together", options, key="heads_set")
    if not chosen:
        st.info("Pick one or more heads above to ablate them together.")
        return
    heads = tuple((kind, *map(int, c[1:].split(" H"))) for c in chosen)
    compare_outputs(name, text, heads, mode)  # type: ignore[arg-type]


def roles(name: str, text: str, kind: AttentionKind) -> None:
    """One map per role score, with what it means."""
    try:
        scores = caches.head_roles(name, text, kind)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    cols = st.columns(min(3, len(scores)))
    for i, (role, grid) in enumerate(scores.items()):
        meaning, formula, source = ROLES[role]
        with cols[i % len(cols)]:
            widgets.chart(figures.head_grid(grid, f"{role}", "score"), f"role-{role}")
            st.caption(f"**{role}**: {meaning}. Score = {formula}. Source: {source}.")


def patching(name: str, kind: AttentionKind, example: str) -> None:
    """A form of two sentences; each head's clean output put into the corrupted run."""
    clean_default, corrupt_default = PATCH_PAIRS.get(name, (example, example))
    with st.form("patching"):
        clean = st.text_input("Clean sentence", clean_default, key="heads_clean")
        corrupted = st.text_input(
            "Corrupted sentence (same number of tokens)", corrupt_default, key="heads_corrupted"
        )
        go = st.form_submit_button("Patch every head", key="heads_patch")
    if not go:
        return
    try:
        scores = caches.patch_heads(name, clean, corrupted, kind)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    widgets.chart(
        figures.head_grid(
            scores,
            "Fraction of the logit difference each head restores",
            "restored",
            diverging=True,
            subtitle="1: the clean head alone restores the clean output's preference; 0: nothing",
        ),
        "head-patching",
    )


def lens(name: str, text: str) -> None:
    """The logit lens of the decoder."""
    try:
        result: vt.Lens = caches.logit_lens(name, text)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    widgets.chart(figures.lens_figure(result.inputs, result.tokens, result.probs), "logit-lens")
