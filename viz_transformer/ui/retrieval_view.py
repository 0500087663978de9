"""A retrieval-heads run as a view of its own: the links of What heads do's Retrieval heads section
(real links, openable in a new tab) carry the run's parameters in the URL key ``ret_run``
(``records.retrieval_ref``), and Attention maps and the Q, K, V walkthrough show that run's prompt +
output instead of the sidebar's sentence, which stays as the user left it.

The run's text is found in a store shared by every session (filled as the section's runs end), or
recomputed from its parameters (a built-in haystack anywhere; a pasted one on the server that
received it) as a stoppable job.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import streamlit as st

import viz_transformer as vt
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.retrieval_ref import RunRef, parse
from viz_transformer.text.checks import check_text
from viz_transformer.text.corpora import builtin_haystack
from viz_transformer.ui import caches, focus, jobs, state

RUN_KEY = "ret_run"
BESIDE_KEY = "_ret_beside"  # (model, sentence) when the run view opened: a new one ends it
_RESERVED = re.compile(r"%(2[346BCF]|3[ABDF]|40)", re.IGNORECASE)  # escapes decodeURI keeps
SCROLLED_KEY = "_ret_scrolled"  # the run whose view was already scrolled to
JOB = jobs.JobText(
    "Running the model on the link's prompt (the run was not kept on this server)…",
    "Stopped. Start the run again?",
    "Run it",
    "ret_view",
)


@st.cache_resource
def _haystacks() -> BoundedCache:
    return BoundedCache(32, len, 64 << 20)  # pasted or uploaded texts by digest


@st.cache_resource
def views() -> BoundedCache:
    """(model, run key) -> the run's prompt + output, shared by every session."""
    return BoundedCache(128, len, 256 << 20)


def haystack_ref(text: str, builtin: str | None) -> str:
    """``b:<name>`` for a built-in text, else ``h:<digest>`` with the text kept on this server."""
    if builtin:
        return f"b:{builtin}"
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    _haystacks().put(digest, text)
    return f"h:{digest}"


def haystack_text(ref: RunRef) -> str | None:
    """The haystack a run names, or None when it was pasted in a server that forgot it."""
    return builtin_haystack(ref.builtin) if ref.builtin else _haystacks().get(ref.haystack[2:])


def link(page: str, name: str, ref: RunRef, view: Mapping[str, Any]) -> str:
    """A relative URL opening ``pages/<page>.py`` on the run ``ref`` of ``name`` in ``view``
    (URL keys: kind, layer, head, zoom...), the sidebar's sentence kept (when a URL holds it)."""
    params = {state.MODEL_KEY: name, RUN_KEY: ref.key, **{k: str(v) for k, v in view.items()}}
    sentence = st.session_state.get(state.TEXT_KEY)
    if isinstance(sentence, str) and len(sentence) <= state.URL_TEXT_LIMIT:
        params[state.TEXT_KEY] = sentence
    return f"{page}?{urlencode(params)}"


def for_plotly(url: str) -> str | None:
    """``url`` as a link inside a plotly figure, or None where it cannot be one: plotly rewrites
    a link's address as ``encodeURI(decodeURI(url))``, which escapes an escaped ``&``, ``=``,
    ``+`` or ``#`` a second time; the other reserved characters are written bare instead."""
    path, _, query = url.partition("?")
    query = urlencode(parse_qsl(query), quote_via=quote, safe=":/?@$,;|")
    return None if _RESERVED.search(query) else f"{path}?{query}"


def leave() -> None:
    """Back to the sidebar's sentence (a callback, or when the sentence changed)."""
    st.session_state.pop(RUN_KEY, None)
    st.session_state.pop(BESIDE_KEY, None)
    st.query_params.pop(RUN_KEY, None)


def _compute(name: str, ref: RunRef, haystack: str) -> str | None:
    """The run's prompt + output, run again from its parameters as a stoppable job (None after
    a message: stopped, or the model cannot run it)."""
    model = caches.model(name)

    def run(progress: Any, stop: Any) -> str:
        # a sweep of one: the same cut of the text (``lengths``) as the sweep that made the link
        s = vt.retrieval_heads(
            model,
            [check_text(haystack, "long text")],
            ref.needle,
            depths=[ref.depth],
            lengths=[ref.length or None],
            prompt=ref.form,
            question=ref.question or None,
            progress=progress,
            stop=stop,
        )
        return s.runs[0].result.text

    return jobs.stoppable(JOB, views(), (name, ref.key), run)


def run_text(name: str, text: str, anchor: str) -> str:
    """The text a page draws: the run of the URL's ``ret_run`` (with a note and a way back to the
    sidebar's sentence) or else ``text``; the first time a run is shown, the view moves to
    ``anchor`` (``focus``)."""
    value = st.session_state.get(RUN_KEY)
    if not value:
        return text
    beside = st.session_state.setdefault(BESIDE_KEY, (name, text))
    try:
        ref = parse(value)
    except ValueError:
        ref = None
    if ref is None or beside != (name, text):  # a bad key, or a new sentence or model
        leave()
        return text
    shown = views().get((name, ref.key))
    haystack = haystack_text(ref) if shown is None else None
    if shown is None and haystack is None:
        st.info(
            "This link's run hid its needle in a pasted text this server no longer holds: run it "
            "again in What heads do. Showing the sidebar's sentence."
        )
        leave()
        return text
    left, right = st.columns([4, 1], vertical_alignment="center")
    left.info(
        f"Showing a retrieval run's prompt + output ({ref.describe()}), not the sidebar's "
        "sentence, which is kept."
    )
    right.button("Show the sidebar's sentence", key="ret_leave", on_click=leave)
    if shown is None:
        shown = _compute(name, ref, haystack)  # a message and Stop, or an error, on failure
        if shown is None:
            st.stop()
    if st.session_state.get(SCROLLED_KEY) != ref.key:
        st.session_state[SCROLLED_KEY] = ref.key
        focus.request(anchor)
    return shown
