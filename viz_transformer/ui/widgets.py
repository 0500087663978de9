"""Widgets every page shares: the sidebar, headers, charts, downloads, pickers and error messages.

Every page starts with ``sidebar()``, draws figures with ``chart()`` and shows a failure with
``show_error()`` (a message in the page, never a traceback).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import viz_transformer as vt
from viz_transformer.records.export import to_json, to_npz
from viz_transformer.records.kinds import KIND_SHORT, KIND_TITLES, KINDS, AttentionKind
from viz_transformer.settings import MAX_CHARS
from viz_transformer.text import uploads
from viz_transformer.ui import caches, state

T = TypeVar("T")
# ValueError is bad input; RuntimeError and OSError come from a model that cannot load (a corrupt
# or missing file): the message names it and the other models keep working
LOAD_ERRORS = (ValueError, RuntimeError, OSError)
_FORMATS = (  # label, writer, file extension, MIME type of the downloads
    ("Data as JSON", to_json, "json", "application/json"),
    ("Data as NPZ", to_npz, "npz", "application/octet-stream"),
)
# Markdown, LaTeX ($) and emoji-shortcode (:) characters: user text is shown, never rendered
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


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


def _model_picker() -> str:
    names = vt.available_models()
    if not names:
        st.error(
            "No model is installed: the weights under viz_transformer/weights/ are missing. "
            "Retrain them with `python -m viz_transformer.training.train`."
        )
        st.stop()
    wanted = st.session_state.get(state.MODEL_KEY)
    if isinstance(wanted, str) and wanted.startswith("hf:") and wanted not in names:
        try:  # an hf: model from a shared link
            state.remember_model(caches.spec(wanted).name)
        except (ValueError, OSError) as exc:
            with st.sidebar:
                show_error(exc)
    names = names + st.session_state.get(state.EXTRA_KEY, [])
    state.keep_choice(state.MODEL_KEY, names)
    st.session_state.setdefault(state.SHOWN_KEY, st.session_state[state.MODEL_KEY])
    return st.selectbox(
        "Model",
        names,
        key=state.MODEL_KEY,
        on_change=state.on_model_change,
        help="The paper-* models are built exactly as section 3 of the paper describes.",
    )


def _hf_adder() -> None:
    """A field for any Hugging Face model by hub id or folder."""
    with st.expander("Another Hugging Face model"):
        st.text_input(
            "Hub id or absolute folder",
            key=state.HF_KEY,
            placeholder="Helsinki-NLP/opus-mt-en-de",
            help="Loaded from a local folder or the local cache; downloaded only when the "
            "network allows. Encoder, decoder and encoder-decoder models all work.",
        )
        st.button("Add model", on_click=state.add_hf_model)
        if state.HF_ERROR_KEY in st.session_state:
            show_error(st.session_state[state.HF_ERROR_KEY])


def _leave_v1_navigation() -> None:
    """Run the page through app.py's ``st.navigation``, also on a first visit to a deep link.

    Streamlit takes a ``pages/`` folder beside app.py for its old multipage layout until some
    run calls ``st.navigation``; a server's first request for a page URL (a teacher's link)
    would run the page alone and list the files as navigation. Clearing that flag and rerunning
    goes through app.py to the same page (page ids come from the URL path in both layouts).
    """
    from streamlit.runtime.pages_manager import PagesManager

    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


def sidebar() -> tuple[str, str]:
    """Model and sentence pickers shared by every page; returns (model name, sentence)."""
    _leave_v1_navigation()
    state.keep()
    state.read_url()
    with st.sidebar:
        name = _model_picker()
        spec = caches.spec(name)
        st.session_state.setdefault(state.TEXT_KEY, spec.example)
        text = st.text_area("Sentence", key=state.TEXT_KEY, height=90, max_chars=MAX_CHARS)
        shows = ", ".join(KIND_SHORT[k] for k in spec.shows)
        st.caption(f"{spec.description} Shows {shows}; {spec.positions} positions.")
        st.button("Use the example", help=spec.example, on_click=state.use_text,
                  args=(spec.example,))  # fmt: skip
        _hf_adder()
        st.toggle("Presenter mode", key=state.PRESENTER_KEY, help="Larger text for a projector.")
    if st.session_state.get(state.PRESENTER_KEY):
        st.html("<style>html { font-size: 22px; }</style>")
    state.write_url()
    return name, text


def page_header(title: str, intro: str, equation: str | None = None) -> None:
    """Title, two lines of explanation and the paper's equation (LaTeX) where one applies."""
    st.title(title)
    st.markdown(intro)
    if equation:
        st.latex(equation)


def show_missing(trace: vt.Trace, what: str) -> None:
    """Say for each attention kind without a map why: "No <kind> <what>: <why>"."""
    for kind, why in trace.notes.items():
        st.info(f"No {KIND_TITLES[kind].lower()} {what}: {why}")


def kind_picker(trace: vt.Trace) -> AttentionKind:
    """A radio of the attention kinds ``trace`` has a map of (key ``kind``, shared in links)."""
    kinds = [k for k in KINDS if trace.get(k) is not None]
    state.keep_choice("kind", kinds)
    return st.radio("Attention kind", kinds, format_func=KIND_TITLES.get, horizontal=True,
                    key="kind")  # fmt: skip


def chips(tokens: tuple[str, ...]) -> str:
    """Tokens as inline code, each one a chip (a backtick in a token cannot end the chip)."""
    return " ".join(f"`{t.replace('`', 'ˋ')}`" for t in tokens)


def chart(fig: go.Figure, name: str = "figure", key: str | None = None) -> None:
    """Draw ``fig`` full width; plotly's camera button saves it as PNG (``name``.png).

    ``fig`` is left unchanged (presenter mode enlarges a copy): it may be a cached figure that
    other sessions draw too.
    """
    if st.session_state.get(state.PRESENTER_KEY):
        fig = go.Figure(fig).update_layout(font_size=20, title_font_size=24)
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2},
    }
    st.plotly_chart(fig, width="stretch", config=config, key=key)


def downloads(stem: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
    """JSON and NPZ downloads of exactly the data behind the current view.

    The files are written when a button is clicked (deferred data), not on every rerun: the
    JSON of a view's arrays took more time than drawing the view.
    """
    arrays, meta = dict(arrays), dict(meta)
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
    lines = upload.lines
    if (st.session_state.get(key) or 0) >= len(lines):
        st.session_state[key] = None
    st.selectbox(
        f"Sentence ({len(lines)} in the file)",
        range(len(lines)),
        index=None,
        format_func=lambda i: f"{i + 1}: {lines[i][:90]}",
        key=key,
        on_change=state.use_line,
        args=(lines, key),
        placeholder="Pick a line",
    )
