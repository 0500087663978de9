"""Caches of the head experiments (ablation, patching, roles, logit lens): every result keyed by
(model, text, kind, options) and shared by every session, and by the course's answers
(``grading_caches``): a class and the What heads do page compute each once."""

from __future__ import annotations

import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis import effects
from viz_transformer.course.grading_caches import GradingCaches
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.ui import caches
from viz_transformer.ui.caches import model

# What heads do reads at most this many source tokens: its experiments hold layers x heads x n x n
# values (n = 1,000 smollm2 tokens took 8-15 GB); 256 keeps smollm2 under 2 GB
HEADS_MAX_TOKENS = 256


@st.cache_resource(show_spinner=False)
def head_importance_store() -> BoundedCache:
    """Importance maps keyed by (model, text, kind, mode), shared by every session. A plain
    bounded dictionary rather than ``st.cache_data``: the first computation draws a progress
    bar, which a cached function may not."""
    return BoundedCache(32)


@st.cache_resource(show_spinner=False)
def ablated_store() -> BoundedCache:
    """Ablated outputs (``effects.AblatedOutput``: a text and a few numbers per output token)
    keyed by (model, text, heads, mode), shared by every session; a plain bounded dictionary,
    since the first computation draws a progress bar."""
    return BoundedCache(64)


@st.cache_resource(show_spinner=False)
def roles_store() -> BoundedCache:
    """Role scores per head (``analysis.roles.ROLES``, five small grids) keyed by ("roles",
    model, text, kind), shared by every session; bounded, the first computation a stoppable job
    (``ui.jobs``), as the stores below."""
    return BoundedCache(32)


@st.cache_resource(show_spinner=False)
def patching_store() -> BoundedCache:
    """Fractions restored per head, ``[layers, heads]``, keyed by ("patch", model, clean,
    corrupted, kind)."""
    return BoundedCache(32)


@st.cache_resource(show_spinner=False)
def lens_store() -> BoundedCache:
    """Logit lenses (``vt.Lens``: a top token and its probability per layer and position, at most
    ``HEADS_MAX_TOKENS`` source tokens and their output) keyed by ("lens", model, text)."""
    return BoundedCache(32)


@st.cache_resource(show_spinner=False)
def flow_store() -> BoundedCache:
    """Attention flows ``[layers, n, n]`` (``analysis.flow``, at most ``flow.MAX_TOKENS``
    tokens) keyed by ("flow", model, text, kind): a stoppable job the first time."""
    return BoundedCache(16)


@st.cache_data(max_entries=64, show_spinner=False)
def capped_text(name: str, text: str) -> tuple[str, int]:
    """``text`` within ``HEADS_MAX_TOKENS`` source tokens, and its whole token count."""
    return effects.capped_text(model(name), text, HEADS_MAX_TOKENS)


@st.cache_resource(show_spinner=False)
def demo(name: str) -> effects.Demo | None:
    """The searched input where one head changes ``name``'s output (bench/ablation_demo.py)."""
    return effects.demo_for(model(name))


@st.cache_resource(show_spinner=False)
def qk_store() -> BoundedCache:
    """The corpus page's query/key projections keyed by (model, sentences, kind, layer, head,
    projection), shared by every session; computed under a progress bar and a Stop."""
    return BoundedCache(8)


def importance_key(name: str, text: str, kind: AttentionKind, mode: str) -> tuple:
    """The key of an importance map in ``head_importance_store``: the page's and the course's."""
    return (name, text, kind, mode)


def roles_key(name: str, text: str, kind: AttentionKind) -> tuple:
    """The key of role scores in ``roles_store``."""
    return ("roles", name, text, kind)


def lens_key(name: str, text: str) -> tuple:
    """The key of a logit lens in ``lens_store``."""
    return ("lens", name, text)


@st.cache_resource(show_spinner=False)
def grading_caches() -> GradingCaches:
    """What a lesson's answers are graded from (``vt.grade``, the class store): the pages'
    traces, importance maps, role scores and logit lenses, read and filled under the page's own
    keys, so a course quantity and the What heads do page compute each once per server."""
    return GradingCaches(
        trace=caches.trace,
        importance=lambda m, text, kind, mode: head_importance_store().get_or_make(
            importance_key(m.name, text, kind, mode),
            lambda: vt.head_importance(m, text, kind, None, mode),
        ),
        roles=lambda m, text, kind: roles_store().get_or_make(
            roles_key(m.name, text, kind), lambda: vt.head_roles(m, kind, text)
        ),
        lens=lambda m, text: lens_store().get_or_make(
            lens_key(m.name, text), lambda: vt.logit_lens(m, text)
        ),
    )
