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
from viz_transformer.figures.common import scaled_fonts
from viz_transformer.models.registry import nearest_model
from viz_transformer.records.export import to_json, to_npz
from viz_transformer.records.kinds import KIND_TITLES, KINDS, AttentionKind
from viz_transformer.settings import MAX_CHARS
from viz_transformer.text import uploads
from viz_transformer.ui import caches, first_load, state

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
PRESENTER_CSS = (
    "<style>html { font-size: 20px; } section[data-testid='stSidebar'] { font-size: 16px; }"
    " h1 { font-size: 1.8rem !important; padding: 0 0 0.5rem !important; }"
    " [data-testid='stMainBlockContainer'] { padding: 4rem 1.5rem 2rem !important;"
    " max-width: none !important; }</style>"
)
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
        format_func=_model_label,
        help="The paper-* models are built exactly as section 3 of the paper describes. Each "
        "entry says what it shows: " + "; ".join(f"{n}: {_model_label(n)}" for n in names),
    )


def _model_label(name: str) -> str:
    """A picker entry: the name, its architecture and what it reads (full summary in help)."""
    try:
        spec = caches.spec(name)
    except (ValueError, OSError):
        return name
    return f"{name} · {spec.summary()}"


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
        st.button("Add model", on_click=state.add_hf_model, key="add_hf")
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
        first_load.prepare(name)  # the built-in LLM's one-time conversion, with a progress bar
        spec = caches.spec(name)
        st.session_state.setdefault(state.TEXT_KEY, spec.example)
        text = st.text_area("Sentence", key=state.TEXT_KEY, height=90, max_chars=MAX_CHARS)
        st.caption(f"{spec.description} **Shows** {spec.summary()}.")
        st.button("Use the example", help=spec.example, on_click=state.use_text,
                  args=(spec.example,))  # fmt: skip
        _hf_adder()
        st.toggle("Presenter mode", key=state.PRESENTER_KEY, help="Larger text for a projector.")
        _device_caption()
    if st.session_state.get(state.PRESENTER_KEY):
        st.html(PRESENTER_CSS)
    state.write_url()
    return name, text


def _device_caption() -> None:
    """Where the models run (``VT_DEVICE``, else CUDA when present, else the CPU)."""
    try:
        device = vt.default_device()
    except ValueError as exc:  # VT_DEVICE names a device this machine lacks
        show_error(exc)
        return
    st.caption(f"Models run on **{device}**.", help="Set VT_DEVICE (cpu, cuda, cuda:1, mps).")


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


def chart(fig: go.Figure, name: str = "figure", key: str | None = None) -> None:
    """Draw ``fig`` full width; plotly's camera button saves it as PNG (``name``.png).

    ``fig`` is left unchanged (presenter mode enlarges a copy): it may be a cached figure that
    other sessions draw too.
    """
    if presenting():
        fig = scaled_fonts(fig, PRESENTER_SCALE)
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": _named(name), "scale": 2},
    }
    st.plotly_chart(fig, width="stretch", config=config, key=key)


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
