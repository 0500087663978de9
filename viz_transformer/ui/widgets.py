"""Widgets every page shares: headers, charts, downloads and error messages (pickers are in
``ui.choice``, offers of another model in ``ui.switch``).

Every page starts with ``sidebar.draw()``, draws figures with ``chart()`` and shows a failure
with ``show_error()`` (a message in the page, never a traceback).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from viz_transformer.figures.common import TITLE_CHARS, scaled_fonts, title_outside
from viz_transformer.records.export import to_json, to_npz
from viz_transformer.ui import chart_access, state, theme

T = TypeVar("T")
# ValueError is bad input; RuntimeError and OSError come from a model that cannot load (a corrupt
# or missing file): the message names it and the other models keep working
LOAD_ERRORS = (ValueError, RuntimeError, OSError)
_FORMATS = (  # label, writer, file extension, MIME type of the downloads
    ("Data as JSON", to_json, "json", "application/json"),
    ("Data as NPZ", to_npz, "npz", "application/octet-stream"),
)
PRESENTER_SCALE = 1.6  # every text of every figure, in presenter mode
# larger page text; the sidebar keeps its size so the page keeps its width on a 1024 px screen
# Markdown, LaTeX ($) and emoji-shortcode (:) characters: user text is shown, never rendered
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")
_CODE = re.compile(r"(`[^`\n]+`)")


def file_name(text: str) -> str:
    """``text`` safe as a file name: ``hf:Helsinki-NLP/opus-mt`` -> ``hf-Helsinki-NLP-opus-mt``."""
    return re.sub(r"[^\w.-]+", "-", text).strip("-") or "view"


def literal(text: str) -> str:
    """``text`` escaped for ``st.markdown``/``st.error``: every character shows as typed."""
    return _MARKUP.sub(r"\\\1", text)


def show_error(exc: BaseException | str) -> None:
    """An error message in the page: its text (often quoting user input) stays literal; what it
    quotes between backticks (`hf download ...`) is drawn as code, as typed without escapes."""
    st.error("".join(p if i % 2 else literal(p) for i, p in enumerate(_CODE.split(str(exc)))))


def or_stop(
    func: Callable[..., T],
    *args: Any,
    errors: tuple[type[BaseException], ...] = LOAD_ERRORS,
    say: Callable[[BaseException], str] = str,
) -> T:
    """``func(*args)``, or its error (one of ``errors``) as a message in the page, ``say(exc)``,
    never a traceback, and stop (``ui/class_store.or_stop``: this for a store call)."""
    try:
        return func(*args)
    except errors as exc:
        show_error(say(exc))
        st.stop()
        raise  # unreachable: st.stop() raises; keeps type checkers honest


def or_none(func: Callable[..., T], *args: Any) -> T | None:
    """``func(*args)``, or its error as a message in the page (never a traceback) and None: the
    page goes on without this one section."""
    try:
        return func(*args)
    except LOAD_ERRORS as exc:
        show_error(exc)
        return None


def page_header(title: str, intro: str, equation: str | None = None) -> None:
    """Title, two lines of explanation and the paper's equation (LaTeX) where one applies; in
    presenter mode the explanation folds into an expander, so a chart shows on the first screen
    of a projector."""
    st.title(title)
    where = st.expander("About this page") if presenting() else st.container()
    with where:
        st.markdown(intro)
        if equation:
            st.latex(equation)


def presenting() -> bool:
    """Whether presenter mode is on (larger text everywhere, in the URL)."""
    return bool(st.session_state.get(state.PRESENTER_KEY))


def chips(tokens: tuple[str, ...]) -> str:
    """Tokens as inline code, each one a chip (a backtick in a token cannot end the chip)."""
    return " ".join(f"`{t.replace('`', 'ˋ')}`" for t in tokens)


def chart(
    fig: go.Figure,
    name: str = "figure",
    key: str | None = None,
    on_select: Callable[[], None] | None = None,
    share: float = 1.0,
) -> None:
    """Draw ``fig`` full width, named and described for screen readers, with its numbers and a
    "Save figure" menu (SVG, PDF, PNG as ``name``.*) under it (``chart_access``); a click on a
    point calls ``on_select`` (its selection is in ``st.session_state[key]``).

    ``share`` is the part of the page's width the chart gets (1/3 in one of three columns): a
    title longer than fits it is set above the chart instead, where it wraps. ``fig`` is left
    unchanged (presenter mode enlarges a copy): it may be a cached figure that other sessions
    draw too.
    """
    # a chart in a third of the page enlarges less: its token labels stay one cell apart
    scale = 1 + (PRESENTER_SCALE - 1) * min(1.0, 1.5 * share) if presenting() else 1.0
    original = fig
    fig, title = title_outside(fig, round(TITLE_CHARS * share / scale))
    if title:
        st.markdown(f"**{literal(title)}**")
    if presenting():
        fig = scaled_fonts(fig, scale)
    fig = theme.dark_bar_labels(fig)
    label, words = chart_access.name_and_words(original, name)
    config = chart_access.config(_named(name))
    picks = {"on_select": on_select, "selection_mode": "points"} if on_select else {}
    st.plotly_chart(fig, width="stretch", config=config, key=key, alt=label, **picks)
    said = f"{label}: {words}"
    chart_access.beneath(original, said, literal(said), _named(name), key or name, share)


def _named(stem: str) -> str:
    """``stem`` prefixed with the sidebar's model, the file name of a PNG or a download."""
    model = st.session_state.get(state.MODEL_KEY)
    return f"{file_name(model)}_{stem}" if model else stem


def downloads(stem: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
    """JSON and NPZ downloads of exactly the data behind the current view, named by the model
    (``meta["model"]``, else the sidebar's) and ``stem`` (kind, layer, head):
    ``paper-en-pt_attention-cross-L1-H0.npz``.

    The files are written when a button is clicked (deferred data), not on every rerun: the
    JSON of a view's arrays took more time than drawing the view.
    """
    arrays, meta = dict(arrays), dict(meta)
    stem = f"{file_name(str(meta['model']))}_{stem}" if meta.get("model") else _named(stem)
    for column, (label, write, ext, mime) in zip(st.columns(2), _FORMATS, strict=True):
        column.download_button(
            label,
            lambda write=write: write(arrays, meta),
            f"{stem}.{ext}",
            mime,
            key=f"{stem}-{ext[0]}",
            on_click="ignore",
        )
