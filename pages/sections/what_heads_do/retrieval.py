"""The "Retrieval heads" section of What heads do (issues 47 and 54): hide a needle in a long text,
let the model continue it, and see which heads copied it (``vt.retrieval_heads``); one run, or a
sweep over needle depths x prompt lengths drawn as the heads most often retrieving.

The run is a stoppable job (``ui.jobs``) started by a button; its text is its own (pasted,
uploaded or built in), not the sidebar's sentence. What it shows, and its links, are in
``retrieval_results``; each run's prompt + output is kept for the links
(``ui.retrieval_view``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import streamlit as st

import viz_transformer as vt
from pages.sections.what_heads_do import retrieval_results as results
from viz_transformer.analysis.retrieval.run import RetrievalResult, check_model, prepare
from viz_transformer.analysis.retrieval.sweep import RetrievalSweep, fit
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
FORMS = {"copy": "Copy cue (the needle's first half)", "question": "A question (Wu et al.)"}
QUESTION = "What is the best thing to do in San Francisco?"  # Wu et al.'s, for the needle above
SOURCES = ("built-in", "paste", "upload")
SWEEP = (0.1, 0.3, 0.5, 0.7, 0.9)
DEPTHS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
LENGTHS = (256, 512, 1024, 2048, 4096, 8192)  # prompt lengths offered, in tokens
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
    """The prompt lengths (tokens) a sweep may ask: the offered ones the text is long enough for
    and the context holds with room for the answer, then the whole text (0) when it fits."""
    total, limit = len(model.encode_text(text)), model.max_positions() - ROOM
    offered = tuple(n for n in LENGTHS if n < min(total, limit + 1))
    return offered + ((0,) if total <= limit else ())


def _where(model: vt.LoadedModel, haystack: str | None) -> tuple[tuple, tuple, bool]:
    """The sweep's or the run's depths and prompt lengths (0: the whole text), and whether the
    means count only the runs that found the needle."""
    left, right = st.columns(2)
    if not st.toggle("Sweep needle depths × prompt lengths", key="ret_sweep"):
        depth = left.slider("Depth (0 = start, 1 = end)", 0.0, 1.0, 0.5, 0.05, key="ret_depth")
        return (depth,), (0,), False
    depths = left.multiselect("Depths", DEPTHS, default=SWEEP, key="ret_depths")
    try:
        offered = _lengths(model, check_text(haystack or "", "long text"))
    except ValueError:
        offered = (0,)
    lengths = right.multiselect(
        "Prompt lengths (tokens)",
        offered,
        default=offered[-2:],
        key="ret_lengths",
        format_func=lambda n: f"{n:,}" if n else "the whole text",
    )
    only = st.checkbox(
        "Count only the runs whose output holds the needle (Wu et al.: ROUGE-1 recall > 0.5)",
        key="ret_only_found",
    )
    return tuple(sorted(depths)), tuple(sorted(lengths, key=lambda n: n or 10**9)), only


@dataclass(frozen=True)
class Job:
    """One press of the button: the model, the text (by digest), the needle, where, and how."""

    name: str
    digest: str
    needle: str
    depths: tuple[float, ...]
    lengths: tuple[int, ...]  # prompt lengths asked (0: the whole text)
    builtin: str | None
    several: bool  # a sweep (its picture), even of one depth and length
    only_found: bool
    form: str = "copy"
    question: str = ""

    def ref(self, text: str, depth: float, length: int | None) -> RunRef:
        """The link's name of one of its runs."""
        where = retrieval_view.haystack_ref(text, self.builtin)
        return RunRef(where, depth, length or 0, self.form, self.needle, self.question)

    @property
    def how(self) -> dict:
        """The prompt's form, as ``vt.retrieval_heads`` takes it."""
        return {"prompt": self.form, "question": self.question or None}


def _sweep(
    model: vt.LoadedModel, text: str, job: Job, out: dict, progress: OnFraction, stop: StopToken
) -> RetrievalSweep:
    """The sweep, each run's prompt + output kept for its links (``retrieval_view``)."""
    s = vt.retrieval_heads(
        model,
        [text],
        job.needle,
        depths=list(job.depths),
        lengths=[n or None for n in job.lengths],
        only_found=job.only_found,
        out=out,
        progress=progress,
        stop=stop,
        **job.how,
    )
    for r in s.runs:
        retrieval_view.views().put((job.name, job.ref(text, r.depth, r.length).key), r.result.text)
    return s


def _one(
    model: vt.LoadedModel, text: str, job: Job, progress: OnFraction, stop: StopToken
) -> tuple[RetrievalResult, RunRef]:
    """One run (its trace dropped), and its prompt + output kept for its links."""
    depth = job.depths[0]
    r = vt.retrieval_heads(model, text, job.needle, depth, progress=progress, stop=stop, **job.how)
    ref = job.ref(text, depth, 0)
    retrieval_view.views().put((job.name, ref.key), r.text)
    return r.without_trace(), ref


def _form() -> tuple[str, str]:
    """The prompt's form (``copy`` or ``question``) and the question typed (also used when a
    copy run is compared with the question prompt)."""
    form = st.radio(
        "Prompt",
        ("copy", "question"),
        horizontal=True,
        key="ret_form",
        format_func=FORMS.get,
        help="Copy cue: the prompt ends with the needle's first half, so the model copies the "
        "rest (induction). Question: it ends by asking a question whose answer is the needle's "
        "tail, which also needs a look-up by meaning for the first answer token.",
    )
    question = st.text_input("Question (for the question prompt)", QUESTION, key="ret_question")
    return form, " ".join(question.split())


def _run(model: vt.LoadedModel, text: str, job: Job) -> RetrievalResult | RetrievalSweep | None:
    """The job's result, computed the first time under a progress bar and Stop; its results."""
    if job.several:
        kept = _kept()
        runs = (job.digest, job.needle, job.depths, job.lengths, job.form, job.question)
        if runs not in kept:  # a sweep's runs, whatever its means count
            kept.put(runs, {})
        out = kept[runs]
        return jobs.stoppable(JOB, _store(), job, lambda p, s: _sweep(model, text, job, out, p, s))
    return jobs.stoppable(JOB, _store(), job, lambda p, s: _one(model, text, job, p, s))


def section(name: str) -> None:
    """The section: inputs, the job under a button, then its results (``retrieval_results``)."""
    st.caption(
        "Wu et al. (2024): a head **retrieves** when, as the model copies a sentence from far "
        "back, its strongest weight lands on the very token being copied. The needle is hidden "
        "at a sentence boundary; the prompt ends with its first half (or asks a question it "
        "answers); a head's score is the share of the answer's tokens it copied. Sink: its mean "
        "weight on the first token."
    )
    model = caches.model(name)
    try:
        check_model(model)
    except ValueError as exc:
        st.info(str(exc))
        return
    haystack, builtin = _haystack()
    needle = st.text_input("Needle (a sentence to hide)", NEEDLE, key="ret_needle")
    form, question = _form()
    depths, lengths, only = _where(model, haystack)
    if st.button("Find retrieval heads", key="ret_start", type="primary"):
        try:
            haystack = check_text(haystack or "", "long text")
            if not depths or not lengths:
                raise ValueError("Pick at least one depth and one prompt length to sweep.")
            asked = question if form == "question" else None
            for n in lengths:  # bad input: a message, no job
                cut = fit(model, haystack, needle, n or None, form, asked)
                prepare(model, cut, needle, depths[0], form, asked)
        except ValueError as exc:
            st.error(str(exc))
            return
        digest = hashlib.sha256(haystack.encode()).hexdigest()
        several = bool(st.session_state.get("ret_sweep"))
        needle = " ".join(needle.split())
        job = Job(name, digest, needle, depths, lengths, builtin, several, only, form, asked or "")
        st.session_state["ret_job"] = job
        st.session_state["ret_haystack"] = haystack
    job = st.session_state.get("ret_job")
    if not isinstance(job, Job) or job.name != name:
        return
    text = st.session_state["ret_haystack"]
    done = _run(model, text, job)
    if done is None:
        return
    if job.several:
        results.sweep(name, done, lambda depth, length: job.ref(text, depth, length))
    else:
        results.run(name, *done)
    other = replace(job, form="copy", question="") if job.form == "question" else None
    if other is None and question:
        other = replace(job, form="question", question=question)
    if other is not None and st.toggle(f"Compare with the {other.form} prompt", key="ret_compare"):
        again = _run(model, text, other)
        if again is not None:
            mine, theirs = (done if job.several else done[0]), (again if job.several else again[0])
            results.forms(mine, theirs)
