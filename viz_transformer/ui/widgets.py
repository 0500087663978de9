"""Widgets every page shares: headers, charts, downloads, pickers and error messages.

Every page starts with ``sidebar.draw()``, draws figures with ``chart()`` and shows a failure
with ``show_error()`` (a message in the page, never a traceback).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import viz_transformer as vt
from viz_transformer.figures.common import TITLE_CHARS, scaled_fonts, title_outside
from viz_transformer.models.registry import nearest_model
from viz_transformer.records.export import to_json, to_npz
from viz_transformer.records.kinds import KIND_TITLES, KINDS, AttentionKind
from viz_transformer.text import uploads
from viz_transformer.ui import state

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


def file_name(text: str) -> str:
    """``text`` safe as a file name: ``hf:Helsinki-NLP/opus-mt`` -> ``hf-Helsinki-NLP-opus-mt``."""
    return re.sub(r"[^\w.-]+", "-", text).strip("-") or "view"


def literal(text: str) -> str:
    """``text`` escaped for ``st.markdown``/``st.error``: every character shows as typed."""
    return _MARKUP.sub(r"\\\1", text)


def show_error(exc: BaseException | str) -> None:
    """An error message in the page; its text (often quoting the user's input) stays literal."""
    st.error(literal(str(exc)))


def or_stop(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)``, or its error as a message in the page (never a traceback) and stop."""
    try:
        return func(*args)
    except LOAD_ERRORS as exc:
        show_error(exc)
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


def offer_switch(message: str, name: str, wanted: Callable[[vt.ModelSpec], bool],
                 what: str) -> None:  # fmt: skip
    """``message`` (why ``name`` has no ``what``), the nearest model that has it and a button
    that switches to it, keeping the sentence when that model can read it."""
    other = nearest_model(name, wanted)
    if other is None:
        st.info(message)
        return
    st.info(f"{message} Nearest model with {what}: **{other}**.")
    st.button(f"Switch to {other}", icon=":material/swap_horiz:", on_click=state.switch_model,
              args=(other,), key=f"switch-{what}-{other}")  # fmt: skip


def offer_kind(name: str, kind: AttentionKind, message: str) -> None:
    """``offer_switch`` for a missing attention kind."""
    title = KIND_TITLES[kind].lower()
    offer_switch(message, name, lambda spec: kind in spec.shows, title)


def show_missing(trace: vt.Trace, what: str) -> None:
    """Say for each attention kind without a map why: "No <kind> <what>: <why>", with a button
    to the nearest model that has one."""
    for kind, why in trace.notes.items():
        offer_kind(trace.model_name, kind, f"No {KIND_TITLES[kind].lower()} {what}: {why}")


def kind_picker(trace: vt.Trace) -> AttentionKind:
    """A radio of the attention kinds ``trace`` has a map of (key ``kind``, shared in links)."""
    kinds = [k for k in KINDS if trace.get(k) is not None]
    state.keep_choice("kind", kinds)
    return st.radio("Attention kind", kinds, format_func=KIND_TITLES.get, horizontal=True,
                    key="kind")  # fmt: skip


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
    """Draw ``fig`` full width; plotly's camera button saves it as PNG (``name``.png); a click
    on a point calls ``on_select`` (its selection is in ``st.session_state[key]``).

    ``share`` is the part of the page's width the chart gets (1/3 in one of three columns): a
    title longer than fits it is set above the chart instead, where it wraps. ``fig`` is left
    unchanged (presenter mode enlarges a copy): it may be a cached figure that other sessions
    draw too.
    """
    # a chart in a third of the page enlarges less: its token labels stay one cell apart
    scale = 1 + (PRESENTER_SCALE - 1) * min(1.0, 1.5 * share) if presenting() else 1.0
    fig, title = title_outside(fig, round(TITLE_CHARS * share / scale))
    if title:
        st.markdown(f"**{literal(title)}**")
    if presenting():
        fig = scaled_fonts(fig, scale)
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": _named(name), "scale": 2},
    }
    if on_select is None:
        st.plotly_chart(fig, width="stretch", config=config, key=key)
    else:
        st.plotly_chart(fig, width="stretch", config=config, key=key, on_select=on_select,
                        selection_mode="points")  # fmt: skip


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


def upload_picker(key: str = "upload_line") -> None:
    """A .txt file of sentences, one per line; picking a line puts it in the sidebar."""
    file = st.file_uploader("Text file, one sentence per line", type=["txt", "csv"], key="upload")
    if file is None:
        return
    try:
        upload = uploads.read_lines(file.getvalue(), file.name)
    except ValueError as exc:
        show_error(exc)
        return
    for note in upload.notes:
        st.caption(note)
    line_picker(f"Sentence ({len(upload.lines)} in the file)", upload.lines, key, "Pick a line")


def line_picker(label: str, lines: Sequence[str], key: str, placeholder: str) -> None:
    """A numbered choice among ``lines`` (their first 90 characters); the one picked replaces the
    sidebar's sentence. A remembered pick past the end (other lines now) starts empty again."""
    state.keep_choice(key, [None, *range(len(lines))], None)
    st.selectbox(
        label,
        range(len(lines)),
        index=None,
        format_func=lambda i: f"{i + 1}: {lines[i][:90]}",
        key=key,
        on_change=state.use_line,
        args=(lines, key),
        placeholder=placeholder,
    )
