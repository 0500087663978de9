"""The only Streamlit-aware module: cached loaders, the shared sidebar, the URL, charts, errors.

Every page starts with ``sidebar()`` and draws figures with ``chart()``. The view a teacher may
share (model, sentence, kind, layer, head, step) lives in session-state keys that ``sidebar()``
reads from the URL once per session and writes back on every run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import viz_transformer as vt
from viz_transformer.records.export import to_json, to_npz
from viz_transformer.records.kinds import KIND_SHORT
from viz_transformer.settings import MAX_CHARS, TRACE_CACHE_ENTRIES
from viz_transformer.text import uploads

MODEL_KEY, TEXT_KEY, HF_KEY, EXTRA_KEY = "model", "sentence", "hf_id", "_extra_models"
PRESENTER_KEY = "presenter"
# session-state key -> how to read it from the URL; pages use these keys for their widgets
URL_KEYS: dict[str, Callable[[str], Any]] = {
    MODEL_KEY: str, TEXT_KEY: str, "kind": str, "layer": int, "head": int, "step": int,
}  # fmt: skip
KEPT_KEYS = (*URL_KEYS, HF_KEY, PRESENTER_KEY, "_model_shown")
# Markdown, LaTeX ($) and emoji-shortcode (:) characters: user text is shown, never rendered
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def literal(text: str) -> str:
    """``text`` escaped for ``st.markdown``/``st.error``: every character shows as typed."""
    return _MARKUP.sub(r"\\\1", text)


def show_error(exc: BaseException | str) -> None:
    """An error message in the page; its text (often quoting the user's input) stays literal."""
    st.error(literal(str(exc)))


@st.cache_resource(show_spinner=False)
def cached_spec(name: str) -> vt.ModelSpec:
    return vt.model_info(name)


@st.cache_resource(show_spinner="Loading the model…")
def cached_model(name: str) -> vt.LoadedModel:
    return vt.load_model(name)


@st.cache_resource(max_entries=TRACE_CACHE_ENTRIES, show_spinner="Tracing attention…")
def cached_trace(name: str, text: str, target: str | None = None) -> vt.Trace:
    """One shared, read-only record per input: no copy per rerun, and a long input's lazy heads
    are computed once for every session that looks at them."""
    return vt.trace(cached_model(name), text, target)


def _read_url() -> None:
    """Once per session: take the view from the URL (a teacher's link), ignoring bad values."""
    if st.session_state.get("_url_read"):
        return
    st.session_state["_url_read"] = True
    for key, cast in URL_KEYS.items():
        if key in st.query_params:
            try:
                st.session_state[key] = cast(st.query_params[key])
            except ValueError:
                continue


URL_TEXT_LIMIT = 2000  # longer text stays out of the URL (servers refuse very long request lines)


def _write_url() -> None:
    """Mirror the current view into the URL so copying it reproduces the view."""
    for key in URL_KEYS:
        value = st.session_state.get(key)
        if key == TEXT_KEY and value is not None and len(str(value)) > URL_TEXT_LIMIT:
            st.query_params.pop(key, None)  # a long document does not fit in a link
            continue
        if value is not None and st.query_params.get(key) != str(value):
            st.query_params[key] = str(value)


def _on_model_change() -> None:
    """Swap in the new model's example if the sentence was still the previous model's example."""
    previous = st.session_state.get("_model_shown")
    new = st.session_state[MODEL_KEY]
    if previous and st.session_state.get(TEXT_KEY) == cached_spec(previous).example:
        st.session_state[TEXT_KEY] = cached_spec(new).example
    st.session_state["_model_shown"] = new


def _add_hf_model() -> None:
    """Check the typed Hugging Face id (offline first) and select it, or leave a message."""
    ident = st.session_state.get(HF_KEY, "").strip()
    st.session_state.pop("_hf_error", None)
    if not ident:
        return
    name = ident if ident.startswith("hf:") else f"hf:{ident}"
    try:
        spec = cached_spec(name)
    except (ValueError, OSError) as exc:
        st.session_state["_hf_error"] = str(exc)
        return
    _remember_model(spec.name)
    st.session_state[MODEL_KEY] = spec.name
    _on_model_change()


def _remember_model(name: str) -> None:
    extra = st.session_state.setdefault(EXTRA_KEY, [])
    if name not in extra and name not in vt.available_models():
        extra.append(name)


def _use_example(example: str) -> None:
    st.session_state[TEXT_KEY] = example


def _model_picker() -> str:
    names = vt.available_models()
    if not names:
        st.error(
            "No model is installed: the weights under viz_transformer/weights/ are missing. "
            "Retrain them with `python -m viz_transformer.training.train`."
        )
        st.stop()
    wanted = st.session_state.get(MODEL_KEY)
    if isinstance(wanted, str) and wanted.startswith("hf:") and wanted not in names:
        try:  # an hf: model from a shared link
            _remember_model(cached_spec(wanted).name)
        except (ValueError, OSError) as exc:
            with st.sidebar:
                show_error(exc)
    names = names + st.session_state.get(EXTRA_KEY, [])
    if st.session_state.get(MODEL_KEY) not in names:
        st.session_state[MODEL_KEY] = names[0]
    st.session_state.setdefault("_model_shown", st.session_state[MODEL_KEY])
    return st.selectbox(
        "Model",
        names,
        key=MODEL_KEY,
        on_change=_on_model_change,
        help="The paper-* models are built exactly as section 3 of the paper describes.",
    )


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
    """Model and sentence pickers shared by every page; returns (model name, sentence).

    Every page calls this first. Re-assigning the kept keys keeps their values when the user
    moves to a page where the widgets are new (Streamlit drops the state of widgets not drawn).
    """
    _leave_v1_navigation()
    for key in KEPT_KEYS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    _read_url()
    with st.sidebar:
        name = _model_picker()
        spec = cached_spec(name)
        st.session_state.setdefault(TEXT_KEY, spec.example)
        text = st.text_area("Sentence", key=TEXT_KEY, height=90, max_chars=MAX_CHARS)
        shows = ", ".join(KIND_SHORT[k] for k in spec.shows)
        st.caption(f"{spec.description} Shows {shows}; {spec.positions} positions.")
        st.button("Use the example", help=spec.example, on_click=_use_example, args=(spec.example,))
        with st.expander("Another Hugging Face model"):
            st.text_input(
                "Hub id or absolute folder",
                key=HF_KEY,
                placeholder="Helsinki-NLP/opus-mt-en-de",
                help="Loaded from a local folder or the local cache; downloaded only when the "
                "network allows. Encoder, decoder and encoder-decoder models all work.",
            )
            st.button("Add model", on_click=_add_hf_model)
            if "_hf_error" in st.session_state:
                show_error(st.session_state["_hf_error"])
        st.toggle("Presenter mode", key=PRESENTER_KEY, help="Larger text for a projector.")
    if st.session_state.get(PRESENTER_KEY):
        st.html("<style>html { font-size: 22px; }</style>")
    _write_url()
    return name, text


def page_header(title: str, intro: str, equation: str | None = None) -> None:
    """Title, two lines of explanation and the paper's equation (LaTeX) where one applies."""
    st.title(title)
    st.markdown(intro)
    if equation:
        st.latex(equation)


def chart(fig: go.Figure, name: str = "figure", key: str | None = None) -> None:
    """Draw ``fig`` full width; plotly's camera button saves it as PNG (``name``.png).

    ``fig`` is left unchanged (presenter mode enlarges a copy): it may be a cached figure that
    other sessions draw too.
    """
    if st.session_state.get(PRESENTER_KEY):
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
    left, right = st.columns(2)
    left.download_button(
        "Data as JSON",
        lambda: to_json(arrays, meta),
        f"{stem}.json",
        "application/json",
        key=f"{stem}-j",
        on_click="ignore",
    )
    right.download_button(
        "Data as NPZ",
        lambda: to_npz(arrays, meta),
        f"{stem}.npz",
        "application/octet-stream",
        key=f"{stem}-n",
        on_click="ignore",
    )


def trace_or_stop(name: str, text: str, target: str | None = None) -> vt.Trace:
    """The trace of ``text``, or a clear message in the page (never a traceback) and stop.

    ValueError is bad input; RuntimeError and OSError come from a model that cannot load (a
    corrupt or missing file): the message names it and the other models keep working.
    """
    try:
        return cached_trace(name, text, target)
    except (ValueError, RuntimeError, OSError) as exc:
        show_error(exc)
        st.stop()
        raise  # unreachable: st.stop() raises; keeps type checkers honest


def clamp_state(key: str, upper: int) -> None:
    """Keep a remembered index valid when the model (and so the number of layers) changes."""
    value = st.session_state.get(key, 0)
    if not isinstance(value, int) or not 0 <= value < upper:
        st.session_state[key] = 0


def _use_line(lines: tuple[str, ...]) -> None:
    """Callback of the line picker: the chosen line becomes the sidebar's sentence."""
    index = st.session_state.get("upload_line")
    if index is not None and index < len(lines):
        st.session_state[TEXT_KEY] = lines[index]


def upload_picker() -> None:
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
    if (st.session_state.get("upload_line") or 0) >= len(lines):
        st.session_state["upload_line"] = None
    st.selectbox(f"Sentence ({len(lines)} in the file)", range(len(lines)), index=None,
                 format_func=lambda i: f"{i + 1}: {lines[i][:90]}", key="upload_line",
                 on_change=_use_line, args=(lines,), placeholder="Pick a line")  # fmt: skip
