"""The larger sections of the "What heads do" page (pages/what_heads_do.py), private to it:
importance, one head up close, a set of heads ablated together, activation patching, head roles
and the logit lens, each long computation a stoppable job (``ui.jobs``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis import effects
from viz_transformer.analysis.roles import ROLES as ROLE_TEXTS
from viz_transformer.figures import heads as figures
from viz_transformer.records.kinds import (
    KIND_SHORT,
    AttentionKind,
    KindHead,
    head_label,
    parse_head_label,
)
from viz_transformer.ui import ablation_view, caches, head_caches, jobs, widgets

IMPORTANCE = jobs.JobText(
    "Ablating every head, one per batch row…",
    "Importance stopped. A large model ablates hundreds of heads; start it again?",
    "Compute importance",
    "heads",
)


def importance(name: str, text: str, kind: AttentionKind, mode: str) -> np.ndarray | None:
    """The importance map, computed with a progress bar and a Stop button the first time; None
    after a message (an error, or a stopped job with a button to start it again)."""
    scores = jobs.stoppable(
        IMPORTANCE,
        head_caches.head_importance_store(),
        head_caches.importance_key(name, text, kind, mode),
        lambda progress, stop: vt.head_importance(
            caches.model(name), text, kind, None, mode, progress, stop
        ),
    )
    if scores is None:
        return None
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
    # full width, one under the other, drawn as Attention maps draws a head (issue 28: side by
    # side they were 64-80 px wide, and "<s>" lost its label)
    stem = f"{kind}-L{layer}-H{head}"
    widgets.chart(caches.head_figure(name, text, kind, layer, head, False, None), f"weights-{stem}")
    weighted = caches.value_weighted(name, text, kind)[layer, head]
    fig = figures.weighted_figure(caches.trace(name, text), kind, weighted, layer, head)
    widgets.chart(fig, f"value-weighted-{stem}")
    st.caption(
        "Below: Kobayashi et al. (2020) norm ‖α_ij · v_j W^O_h‖, what key j really adds to "
        "query i through this head. A large weight on a token with a small value moves nothing."
    )
    compare_outputs(name, text, ((kind, layer, head),), mode, "one")


ABLATED = jobs.JobText(
    "Decoding with the heads ablated, token by token…",
    "Ablated output stopped. A long input decodes for a while; start it again?",
    "Decode with the heads ablated",
    "ablate",
)


def compare_outputs(
    name: str, text: str, heads: tuple[KindHead, ...], mode: str, where: str
) -> None:
    """The normal output beside the output with ``heads`` ablated (greedy decoding reruns, with
    a progress bar and a Stop button the first time; ``where`` names this place's widgets), and
    what the ablation did to each token."""
    if not caches.model(name).facts.has_decoder:
        return  # an encoder only: the page says there is no output to change
    normal = caches.trace(name, text)
    ablated = jobs.stoppable(
        replace(ABLATED, key=f"ablate_{where}"),
        head_caches.ablated_store(),
        (name, text, heads, mode),
        lambda progress, stop: effects.ablated_output(
            caches.model(name), text, heads, mode, progress, stop
        ),
    )
    if ablated is None:
        return
    a, b = st.columns(2)
    a.markdown(f"**Normal output**\n\n{widgets.literal(normal.output_text) or '(none)'}")
    changed = "same" if ablated.text == normal.output_text else "**changed**"
    b.markdown(
        f"**With {len(heads)} head(s) ablated ({mode})** ({changed})\n\n"
        f"{widgets.literal(ablated.text) or '(none)'}"
    )
    ablation_view.effect(ablated.effect, heads, mode)  # what changed even when the text did not


def head_set(
    name: str,
    text: str,
    kind: AttentionKind,
    shape: tuple[int, int],
    mode: str,
    scores: np.ndarray | None,
) -> None:
    """Ablate the top k heads of the importance map together, or a chosen set: redundancy."""
    top = ablation_view.top_k(kind, scores)
    if top:
        compare_outputs(name, text, top, mode, "top")
    options = [head_label((layer, h)) for layer in range(shape[0]) for h in range(shape[1])]
    chosen = st.multiselect("Or pick heads to ablate together", options, key="heads_set")
    if not chosen:
        return
    heads = tuple((kind, *parse_head_label(c)) for c in chosen)
    compare_outputs(name, text, heads, mode, "set")  # type: ignore[arg-type]


PATCHING = jobs.JobText(
    "Patching every head, a batch of heads per pass…",
    "Patching stopped. A large model patches hundreds of heads; start it again?",
    "Patch every head",
    "patching",
)
PATCH_ASKED = "_heads_patch_asked"  # the pair last submitted: its map stays until another


def patching(name: str, kind: AttentionKind, pair: tuple[str, str]) -> None:
    """A form of two sentences, pre-filled with the model's own ``pair``; each head's clean
    output put into the corrupted run (a stoppable job, its map kept until another pair)."""
    clean_default, corrupt_default = pair
    with st.form("patching"):
        clean = st.text_input("Clean sentence", clean_default, key="heads_clean")
        corrupted = st.text_input(
            "Corrupted sentence (same number of tokens)", corrupt_default, key="heads_corrupted"
        )
        go = st.form_submit_button("Patch every head", key="heads_patch")
    key = ("patch", name, clean, corrupted, kind)
    if go:  # a Stop or its resume button reruns the page without the submit
        st.session_state[PATCH_ASKED] = key
    if st.session_state.get(PATCH_ASKED) != key:
        return
    scores = jobs.stoppable(
        PATCHING,
        head_caches.patching_store(),
        key,
        lambda progress, stop: vt.patch_heads(
            caches.model(name), clean, corrupted, kind, progress, stop
        ),
    )
    if scores is None:
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


ROLES = jobs.JobText(
    "Scoring head roles: tracing the text, then the text repeated…",
    "Head roles stopped. A long input decodes for a while; start it again?",
    "Score head roles",
    "roles",
)


def roles(name: str, text: str, kind: AttentionKind) -> None:
    """One map per role score, with what it means (a stoppable job the first time)."""
    scores = jobs.stoppable(
        ROLES,
        head_caches.roles_store(),
        head_caches.roles_key(name, text, kind),
        lambda progress, stop: vt.head_roles(caches.model(name), kind, text, None, progress, stop),
    )
    if scores is None:
        return
    # on a projector one per row: in a third of 1024 px the colour bar's ticks were cut off
    cols = st.columns(1 if widgets.presenting() else min(3, len(scores)))
    for i, (role, grid) in enumerate(scores.items()):
        meaning, formula, source = ROLE_TEXTS[role]
        with cols[i % len(cols)]:
            fig = figures.head_grid(
                grid, f"{role}", "score", numbers=None if len(cols) == 1 else False
            )
            widgets.chart(fig, f"role-{role}", share=1 / len(cols))
            st.caption(f"**{role}**: {meaning}. Score = {formula}. Source: {source}.")


LENS = jobs.JobText(
    "Reading every decoder layer: decoding the output, token by token…",
    "Logit lens stopped. A long input decodes for a while; start it again?",
    "Read every decoder layer",
    "lens",
)


def lens(name: str, text: str) -> None:
    """The top next token after every decoder layer (a stoppable job the first time)."""
    read = jobs.stoppable(
        LENS,
        head_caches.lens_store(),
        head_caches.lens_key(name, text),
        lambda progress, stop: vt.logit_lens(caches.model(name), text, None, progress, stop),
    )
    if read is not None:
        widgets.chart(figures.lens_figure(read.inputs, read.tokens, read.probs), "logit-lens")
