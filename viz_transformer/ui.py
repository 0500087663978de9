"""The only Streamlit-aware module: cached loaders, the shared sidebar, error display."""

from __future__ import annotations

import streamlit as st

import viz_transformer as vt
from viz_transformer.capture import MAX_CHARS

MODEL_KEY, TEXT_KEY, HF_KEY, EXTRA_KEY = "model", "sentence", "hf_id", "_extra_models"
SHOWN = {"encoder": "encoder self", "decoder": "decoder masked self", "cross": "cross attention"}


@st.cache_resource(show_spinner=False)
def cached_spec(name: str) -> vt.ModelSpec:
    return vt.model_info(name)


@st.cache_resource(show_spinner="Loading the model…")
def cached_model(name: str) -> vt.LoadedModel:
    return vt.load_model(name)


@st.cache_data(max_entries=128, show_spinner="Tracing attention…")
def cached_trace(name: str, text: str, target: str | None = None) -> vt.Trace:
    return vt.trace(cached_model(name), text, target)


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
    extra = st.session_state.setdefault(EXTRA_KEY, [])
    if spec.name not in extra:
        extra.append(spec.name)
    st.session_state[MODEL_KEY] = spec.name
    _on_model_change()


def sidebar() -> tuple[str, str]:
    """Model and sentence pickers shared by every page; returns (model name, sentence).

    Every page calls this first. Re-assigning the keys keeps their values when the user moves to
    a page where the widgets are new (Streamlit drops the state of widgets not drawn in a run).
    """
    for key in (MODEL_KEY, TEXT_KEY, HF_KEY, "_model_shown"):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    names = vt.available_models() + st.session_state.get(EXTRA_KEY, [])
    if not names:
        st.error(
            "No model is installed: the weights under viz_transformer/weights/ are missing. "
            "Retrain them with `python -m viz_transformer.train`."
        )
        st.stop()
    if st.session_state.get(MODEL_KEY) not in names:
        st.session_state[MODEL_KEY] = names[0]
    st.session_state.setdefault("_model_shown", st.session_state[MODEL_KEY])
    with st.sidebar:
        name = st.selectbox(
            "Model",
            names,
            key=MODEL_KEY,
            on_change=_on_model_change,
            help="The paper-* models are built exactly as section 3 of the paper describes.",
        )
        spec = cached_spec(name)
        st.session_state.setdefault(TEXT_KEY, spec.example)
        text = st.text_area("Sentence", key=TEXT_KEY, height=90, max_chars=MAX_CHARS)
        shows = ", ".join(SHOWN[k] for k in spec.shows)
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
                st.error(st.session_state["_hf_error"])
    return name, text


def _use_example(example: str) -> None:
    st.session_state[TEXT_KEY] = example


def trace_or_stop(name: str, text: str, target: str | None = None) -> vt.Trace:
    """The trace of ``text``, or a clear message in the page (never a traceback) and stop.

    ValueError is bad input; RuntimeError and OSError come from a model that cannot load (a
    corrupt or missing file): the message names it and the other models keep working.
    """
    try:
        return cached_trace(name, text, target)
    except (ValueError, RuntimeError, OSError) as exc:
        st.error(str(exc))
        st.stop()
        raise  # unreachable: st.stop() raises; keeps type checkers honest


def clamp_state(key: str, upper: int) -> None:
    """Keep a remembered index valid when the model (and so the number of layers) changes."""
    if not 0 <= st.session_state.get(key, 0) < upper:
        st.session_state[key] = 0
