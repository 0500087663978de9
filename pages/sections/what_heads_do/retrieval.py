"""The "Retrieval heads" section of What heads do (issues 47 and 54): hide a needle in a long text,
let the model continue it, and see which heads copied it (``vt.retrieval_heads``); one run, or a
sweep over needle depths x haystack lengths drawn as the heads most often retrieving.

The run is a stoppable job (``ui.jobs``) started by a button; its text is its own (pasted,
uploaded or built in), not the sidebar's sentence. What it shows, and its links, are in
``retrieval_results``; each run's prompt + output is kept for the links
(``ui.retrieval_view``).
"""

from __future__ import annotations

import hashlib

import streamlit as st

import viz_transformer as vt
from pages.sections.what_heads_do import retrieval_results as results
from viz_transformer.analysis.retrieval.run import RetrievalResult, check_model, prepare
from viz_transformer.analysis.retrieval.sweep import RetrievalSweep
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.progress import OnFraction, StopToken
from viz_transformer.records.retrieval_ref import RunRef
from viz_transformer.text.checks import check_text
from viz_transformer.text.corpora import HAYSTACKS, builtin_haystack
from viz_transformer.ui import caches, jobs, retrieval_view

# Wu et al.'s needle: its first half ends "... is eat", so the copy starts at " a sandwich"
NEEDLE = (
    "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny "
    "day."
)
SOURCES = ("built-in", "paste", "upload")
SWEEP = (0.1, 0.3, 0.5, 0.7, 0.9)
DEPTHS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
LENGTHS = (256, 512, 1024, 2048, 4096, 8192)  # haystack lengths offered, in tokens
ROOM = 64  # tokens kept free past a haystack for the needle and the answer
JOB = jobs.JobText(
    "Generating, tracing and scoring every head…",
    "Retrieval heads stopped. The runs finished so far are kept; start it again?",
    "Find retrieval heads",
    "retrieval",
)


@st.cache_resource
def _store() -> BoundedCache:
    return BoundedCache(8)  # results shared by every session (no trace kept)


@st.cache_resource
def _kept() -> BoundedCache:
    return BoundedCache(64)  # finished runs of sweeps, so a stopped sweep resumes


def _haystack() -> tuple[str | None, str | None]:
    """The long text, and its built-in name (None for a pasted or uploaded one)."""
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
        return builtin_haystack(name), name
    if source == "paste":
        return st.text_area("Paste a long text", key="ret_text", height=160), None
    upload = st.file_uploader("A plain-text file", type=["txt", "md"], key="ret_upload")
    text = None if upload is None else upload.getvalue().decode("utf-8", errors="replace")
    return text, None


def _lengths(model: vt.LoadedModel, text: str) -> tuple[int, ...]:
    """The haystack lengths (tokens) a sweep may use: the offered ones shorter than the text,
    and the whole text (0) when it fits the model's context with room for the needle."""
    total, limit = len(model.encode_text(text)), model.max_positions() - ROOM
    offered = tuple(n for n in LENGTHS if n < min(total, limit + 1))
    return offered + ((0,) if total <= limit else ())


def _where(model: vt.LoadedModel, haystack: str | None) -> tuple[tuple, tuple]:
    """The sweep's or the run's depths and lengths, as the controls chose them."""
    left, right = st.columns(2)
    if not st.toggle("Sweep needle depths × haystack lengths", key="ret_sweep"):
        depth = left.slider("Depth (0 = start, 1 = end)", 0.0, 1.0, 0.5, 0.05, key="ret_depth")
        return (depth,), (0,)
    depths = left.multiselect("Depths", DEPTHS, default=SWEEP, key="ret_depths")
    try:
        offered = _lengths(model, check_text(haystack or "", "long text"))
    except ValueError:
        offered = (0,)
    lengths = right.multiselect(
        "Haystack lengths (tokens)",
        offered,
        default=offered[-2:],
        key="ret_lengths",
        format_func=lambda n: f"{n:,}" if n else "the whole text",
    )
    return tuple(sorted(depths)), tuple(sorted(lengths, key=lambda n: n or 10**9))


def _sweep(
    model: vt.LoadedModel,
    name: str,
    text: str,
    builtin: str | None,
    needle: str,
    depths: tuple[float, ...],
    lengths: tuple[int, ...],
    out: dict,
    progress: OnFraction,
    stop: StopToken,
) -> tuple[RetrievalSweep, dict[tuple[float, int], results.Cell]]:
    """The sweep's runs, then each run's prompt + output kept for its links, and its cells."""
    hays = [retrieval_view.cut(model, text, n) for n in lengths]
    s = vt.retrieval_heads(
        model, hays, needle, depths=list(depths), out=out, progress=progress, stop=stop
    )
    ref, cells = retrieval_view.haystack_ref(text, builtin), {}
    for r in s.runs:
        run_ref = RunRef(ref, float(r.depth), lengths[r.haystack], "copy", needle)
        p, ids, needle_at, answer_at, _ = prepare(model, hays[r.haystack], needle, r.depth)
        retrieval_view.views().put((name, run_ref.key), check_text(p.text + r.output))
        at = needle_at[0] if needle_at else 0
        cell = results.Cell(run_ref, len(ids), len(ids) - 1, at, answer_at[0] if answer_at else at)
        cells[(float(r.depth), r.haystack)] = cell
    return s, cells


def _one(
    model: vt.LoadedModel,
    name: str,
    text: str,
    builtin: str | None,
    needle: str,
    depth: float,
    progress: OnFraction,
    stop: StopToken,
) -> tuple[RetrievalResult, RunRef]:
    """One run (its trace dropped), and its prompt + output kept for its links."""
    r = vt.retrieval_heads(model, text, needle, depth, progress=progress, stop=stop)
    ref = RunRef(retrieval_view.haystack_ref(text, builtin), float(depth), 0, "copy", needle)
    retrieval_view.views().put((name, ref.key), check_text(r.prompt + r.output))
    return r.without_trace(), ref


def section(name: str) -> None:
    """The section: inputs, the job under a button, then its results (``retrieval_results``)."""
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
    haystack, builtin = _haystack()
    needle = st.text_input("Needle (a sentence to hide)", NEEDLE, key="ret_needle")
    depths, lengths = _where(model, haystack)
    if st.button("Find retrieval heads", key="ret_start", type="primary"):
        try:
            haystack = check_text(haystack or "", "long text")
            if not depths or not lengths:
                raise ValueError("Pick at least one depth and one haystack length to sweep.")
            for n in lengths:  # bad input: a message, no job
                prepare(model, retrieval_view.cut(model, haystack, n), needle, depths[0])
        except ValueError as exc:
            st.error(str(exc))
            return
        digest = hashlib.sha256(haystack.encode()).hexdigest()
        needle = " ".join(needle.split())
        several = bool(st.session_state.get("ret_sweep"))
        st.session_state["ret_job"] = (name, digest, needle, depths, lengths, builtin, several)
        st.session_state["ret_haystack"] = haystack
    job = st.session_state.get("ret_job")
    if not job or job[0] != name:
        return
    _, _, needle, depths, lengths, builtin, several = job
    text = st.session_state["ret_haystack"]
    if several:
        kept = _kept()
        if job[1:] not in kept:
            kept.put(job[1:], {})
        out = kept[job[1:]]
        done = jobs.stoppable(
            JOB,
            _store(),
            job,
            lambda p, s: _sweep(model, name, text, builtin, needle, depths, lengths, out, p, s),
        )
        if done is not None:
            results.sweep(name, done[0], depths, lengths, done[1])
        return
    done = jobs.stoppable(
        JOB,
        _store(),
        job,
        lambda p, s: _one(model, name, text, builtin, needle, depths[0], p, s),
    )
    if done is not None:
        results.run(name, *done)
