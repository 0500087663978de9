"""The sidebar every page draws first: model picker, sentence, another HF model, presenter mode.

It also restores the view from the URL once per session (``state.read_url``) and writes it
back on every run, so a shared link reproduces the page.
"""

from __future__ import annotations

import streamlit as st
import torch

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.settings import MAX_CHARS
from viz_transformer.ui import caches, callbacks, first_load, lesson_links, state, theme, widgets
from viz_transformer.ui.class_place import hold_lessons_class

PRESENTER_CSS = (
    "<style>html { font-size: 20px; } section[data-testid='stSidebar'] { font-size: 16px; }"
    " h1 { font-size: 1.8rem !important; padding: 0 0 0.5rem !important; }"
    " [data-testid='stMainBlockContainer'] { padding: 4rem 1.5rem 2rem !important;"
    " max-width: none !important; }</style>"
)


def _model_picker() -> str:
    names = vt.available_models()
    if not names:
        st.error(
            "No model is installed: the weights under viz_transformer/weights/ are missing. "
            "Retrain them with `python -m viz_transformer.training.tasks.train`."
        )
        st.stop()
    wanted = st.session_state.get(state.MODEL_KEY)
    extra = st.session_state.get(state.EXTRA_KEY, [])
    if isinstance(wanted, str) and wanted not in names and wanted not in extra:
        try:  # a model from a shared link: hf:<id>, paper:<folder>, or a name this server lacks
            callbacks.remember_model(caches.spec(wanted).name)
        except (ValueError, OSError) as exc:  # said at the top of the page, never silently
            st.session_state[state.HF_ERROR_KEY] = f"{exc} Showing {names[0]} instead."
    names = names + st.session_state.get(state.EXTRA_KEY, [])
    state.keep_choice(state.MODEL_KEY, names)
    st.session_state.setdefault(state.SHOWN_KEY, st.session_state[state.MODEL_KEY])
    return st.selectbox(
        "Model",
        names,
        **state.kept(state.MODEL_KEY),
        on_change=callbacks.on_model_change,
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


def _related(name: str, teacher: str | None) -> None:
    """One click to the model ``name`` was distilled from, or to the models distilled from it."""
    names = vt.available_models()
    links = [("teacher", teacher)] if teacher in names else []
    links += [("student", n) for n in names if n != name and caches.spec(n).teacher == name]
    for role, other in links:
        st.button(
            f"Open the {role}: {other}",
            key=f"open_{role}",
            help=caches.spec(other).description,
            on_click=callbacks.pick_model,
            args=(other,),
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
        st.button("Add model", on_click=callbacks.add_hf_model, key="add_hf")


def _torch_threads() -> None:
    """Run torch with ``VT_TORCH_THREADS`` threads (1 by default) per computation, whatever
    ``streamlit run`` inherited: Streamlit runs each session's script in a thread of its own,
    so one thread each lets the sessions share the cores without torch's thread pools fighting
    over them (a new thread adopts the process-wide count this also sets)."""
    if torch.get_num_threads() != settings.TORCH_THREADS:
        torch.set_num_threads(settings.TORCH_THREADS)


def draw() -> tuple[str, str]:
    """Model and sentence pickers shared by every page; returns (model name, sentence)."""
    _torch_threads()
    theme.inject()
    state.keep()
    state.read_url()
    hold_lessons_class()  # a class's student: the teacher's pause holds here too
    with st.sidebar:
        lesson_links.back_button()
        name = _model_picker()
        first_load.prepare(name)  # the built-in LLM's one-time conversion, with a progress bar
        spec = caches.spec(name)
        st.session_state.setdefault(state.TEXT_KEY, spec.example)
        text = st.text_area(
            "Sentence", height=90, max_chars=MAX_CHARS, **state.kept(state.TEXT_KEY)
        )
        st.caption(f"{spec.description} **Shows** {spec.summary()}.")
        st.button(
            "Use the example", help=spec.example, on_click=callbacks.use_text, args=(spec.example,)
        )
        _related(name, spec.teacher)
        _hf_adder()
        st.toggle("Presenter mode", key=state.PRESENTER_KEY, help="Larger text for a projector.")
        _device_caption()
    if st.session_state.get(state.PRESENTER_KEY):
        st.html(PRESENTER_CSS)
    if state.HF_ERROR_KEY in st.session_state:  # at the top of the page, where it is seen; once
        widgets.show_error(st.session_state.pop(state.HF_ERROR_KEY))
    state.write_url()
    return name, text


def frame() -> None:
    """The sidebar of a page with no model of its own (Lesson, Teacher): presenter mode only
    (also from the URL's ``presenter=True``); the other pages' view is kept for them."""
    _torch_threads()  # a lesson's answers are graded on its model
    theme.inject()
    state.keep()
    state.read_url()
    with st.sidebar:
        st.toggle("Presenter mode", key=state.PRESENTER_KEY, help="Larger text for a projector.")
    if st.session_state.get(state.PRESENTER_KEY):
        st.html(PRESENTER_CSS)
        st.query_params[state.PRESENTER_KEY] = "True"
    else:
        st.query_params.pop(state.PRESENTER_KEY, None)


def _device_caption() -> None:
    """Where the models run (``VT_DEVICE``, else CUDA when present, else the CPU)."""
    try:
        device = vt.default_device()
    except ValueError as exc:  # VT_DEVICE names a device this machine lacks
        widgets.show_error(exc)
        return
    half = f"; hf: models in **{settings.DTYPE}**" if settings.DTYPE else ""
    st.caption(
        f"Models run on **{device}**{half}.",
        help="Set VT_DEVICE (cpu, cuda, cuda:1, mps) and VT_DTYPE (float32, bfloat16, float16).",
    )
