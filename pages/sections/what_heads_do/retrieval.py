"""The "Retrieval heads" section of What heads do (issue 47): hide a needle in a long text, let the
model continue it, and see which heads copied it (``vt.retrieval_heads``), each flagged head
linked to its map at the needle and to its score split at the copying step.

The run is a stoppable job (``ui.jobs``) started by a button; its text is its own (pasted,
uploaded or built in), not the sidebar's sentence. A link puts the run's prompt + output in the
sidebar and opens the page on that head (``open_view``, followed by ``follow`` at the top of the
next run, before the sidebar reads the sentence).
"""

from __future__ import annotations

import hashlib

import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis.retrieval.run import FLAG, RetrievalResult, check_model, prepare
from viz_transformer.analysis.retrieval.sweep import RetrievalSweep
from viz_transformer.figures import heads as figures
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.text.checks import check_text
from viz_transformer.text.corpora import HAYSTACKS, builtin_haystack
from viz_transformer.ui import caches, jobs, state, widgets

# Wu et al.'s needle: its first half ends "... is eat", so the copy starts at " a sandwich"
NEEDLE = (
    "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny "
    "day."
)
SOURCES = ("built-in", "paste", "upload")
SWEEP = (0.1, 0.3, 0.5, 0.7, 0.9)
GO_KEY = "_ret_go"  # the page and view a link asked for, followed by ``follow``
JOB = jobs.JobText(
    "Generating, tracing and scoring every head…",
    "Retrieval heads stopped. The runs finished so far are kept; start it again?",
    "Find retrieval heads",
    "retrieval",
)
SHOWN = 5  # flagged heads offered as links


@st.cache_resource
def _store() -> BoundedCache:
    return BoundedCache(8)  # results shared by every session (no trace kept)


@st.cache_resource
def _kept() -> BoundedCache:
    return BoundedCache(64)  # finished runs of sweeps, so a stopped sweep resumes


def follow() -> None:
    """Open the page a link asked for (its view is already in the session state)."""
    page = st.session_state.pop(GO_KEY, None)
    if page:
        st.switch_page(page)


def open_view(page: str, view: dict) -> None:
    """A link's callback: put ``view`` (sentence, kind, layer, head, ...) in the session state
    and ask ``follow`` to open ``page`` on the next run."""
    for key, value in view.items():
        st.session_state[key] = value
    st.session_state[GO_KEY] = page


def _haystack() -> str | None:
    source = st.radio(
        "Long text",
        SOURCES,
        horizontal=True,
        key="ret_source",
        format_func={"built-in": "Built-in", "paste": "Paste", "upload": "Upload a .txt file"}.get,
    )
    if source == "built-in":
        name = st.selectbox(
            "Built-in text", list(HAYSTACKS), format_func=HAYSTACKS.get, key="ret_builtin"
        )
        return builtin_haystack(name)
    if source == "paste":
        return st.text_area("Paste a long text", key="ret_text", height=160)
    upload = st.file_uploader("A plain-text file", type=["txt", "md"], key="ret_upload")
    return None if upload is None else upload.getvalue().decode("utf-8", errors="replace")


def _links(name: str, r: RetrievalResult, text: str) -> None:
    """For each flagged head: its map zoomed on the needle, its score split at the copy."""
    base = {state.MODEL_KEY: name, state.TEXT_KEY: text, "kind": "decoder"}
    needle = r.needle_positions[0] if r.needle_positions else 0
    for layer, head, score in r.flagged()[:SHOWN]:
        at = r.copy_step(layer, head)
        row, key = at if at else (int(r.rows[0]), needle)
        left, mid, right = st.columns([2, 3, 3])
        left.markdown(f"**L{layer} H{head}**: retrieval {score:.2f}")
        zoom = {
            "layer": layer,
            "head": head,
            "attn_tab": "Maps",
            "zoom": True,
            "zoom_q": max(0, row - 8),
            "zoom_k": max(0, needle - 8),
            "zoom_size": 32,
        }
        mid.button(
            "Map at the needle",
            key=f"ret_map_{layer}_{head}",
            on_click=open_view,
            args=("pages/attention_maps.py", {**base, **zoom}),
        )
        why = {"layer": layer, "head": head, "token": row, "why_query": row, "why_key": key}
        right.button(
            "Score split at the copy",
            key=f"ret_why_{layer}_{head}",
            on_click=open_view,
            args=("pages/qkv_walkthrough.py", {**base, **why}),
        )


def _show(name: str, r: RetrievalResult | RetrievalSweep, text: str) -> None:
    sweep = not isinstance(r, RetrievalResult)
    scores = r.table.pivot(index="layer", columns="head", values="retrieval").to_numpy()
    title = "Retrieval score of each head" + (" (mean over depths)" if sweep else "")
    widgets.chart(
        figures.head_grid(
            scores, title, "retrieval", subtitle="share of the needle's second half the head copied"
        ),
        "retrieval-heads",
    )
    if sweep:
        st.write(f"Needle copied in {r.found:.0%} of {len(r.runs)} runs.")
        st.dataframe(r.table.head(10), hide_index=True)
        return
    found = "found" if r.found else "**not** found"
    st.markdown(f"Output: {widgets.literal(r.output)!s} (the needle's second half {found})")
    for message in r.messages:
        st.warning(widgets.literal(message))
    st.dataframe(r.table.head(10), hide_index=True)
    if not r.flagged():
        st.info(f"No head copied the needle (retrieval below {FLAG}).")
    _links(name, r, text)


def section(name: str) -> None:
    """The section: inputs, the job under a button, the grid, the flagged heads' links."""
    st.caption(
        "Wu et al. (2024): a head **retrieves** when, as the model copies a sentence from far "
        "back, its strongest weight lands on the very token being copied. The needle is hidden "
        "at a sentence boundary; the prompt ends with its first half; a head's score is the "
        "share of the second half's tokens it copied. Sink: its mean weight on the first token."
    )
    model = caches.model(name)
    try:
        check_model(model)
    except ValueError as exc:
        st.info(str(exc))
        return
    haystack = _haystack()
    needle = st.text_input("Needle (a sentence to hide)", NEEDLE, key="ret_needle")
    left, right = st.columns(2)
    depth = left.slider("Depth (0 = start, 1 = end)", 0.0, 1.0, 0.5, 0.05, key="ret_depth")
    several = right.toggle(f"Depths {', '.join(map(str, SWEEP))}: mean and spread", key="ret_sweep")
    if st.button("Find retrieval heads", key="ret_start", type="primary"):
        try:
            haystack = check_text(haystack or "", "long text")
            prepare(model, haystack, needle, depth)  # bad input: a message, no job
        except ValueError as exc:
            st.error(str(exc))
            return
        digest = hashlib.sha256(haystack.encode()).hexdigest()
        st.session_state["ret_job"] = (name, digest, needle, SWEEP if several else (depth,))
        st.session_state["ret_haystack"] = haystack
    job = st.session_state.get("ret_job")
    if not job or job[0] != name:
        return
    text = st.session_state["ret_haystack"]
    kept = _kept()
    if len(job[3]) > 1:
        if job[1:] not in kept:
            kept.put(job[1:], {})
        out = kept[job[1:]]
        run = lambda progress, stop: vt.retrieval_heads(  # noqa: E731
            model, [text], job[2], depths=list(job[3]), out=out, progress=progress, stop=stop
        )
    else:
        run = lambda progress, stop: vt.retrieval_heads(  # noqa: E731
            model, text, job[2], job[3][0], progress=progress, stop=stop
        ).without_trace()
    result = jobs.stoppable(JOB, _store(), job, run)
    if result is not None:
        shown = result.prompt + result.output if isinstance(result, RetrievalResult) else ""
        _show(name, result, check_text(shown) if shown else "")
