"""The answer box of a lesson step's check, one per check kind: a head typed ("L1 H3") or clicked
in a grid of the kind's heads, a token, a number, an option, free text. Answers are strings as
the student gives them; ``vt.grade`` reads them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

import viz_transformer as vt
from viz_transformer.ui import caches, widgets

Answer = Callable[[str], None]
PLACEHOLDERS = {"head": "L1 H3", "token": "a token, as the page shows it", "number": "0.62"}
LABELS = {"head": "Head (layer and head, from 0)", "token": "Token", "number": "Number",
          "text": "Your answer"}  # fmt: skip


def answer_box(check: vt.Check, step: int, given: str | None, on_answer: Answer) -> None:
    """Draw the answer widgets of ``check`` (the ``step``-th of its lesson); an answer given
    calls ``on_answer(answer)`` (a callback: it runs before the page's next run).

    Args:
        check: the step's check.
        step: the step's index, which keys the widgets (each step keeps its own box).
        given: the student's last answer to this step, shown in the box again.
        on_answer: takes the answer as a string ("L1 H3", an option's text, what was typed).
    """
    if check.question:
        st.markdown(f"**{check.question}**")  # the lesson's own Markdown
    if check.kind == "choice":
        _choice(check.options, step, given, on_answer)
        return
    if check.kind == "head":
        _head_grid(check, step, on_answer)
    key = f"lesson-typed-{step}"
    if given is not None and key not in st.session_state:
        st.session_state[key] = given  # a resumed session shows the last answer
    with st.form(key=f"lesson-answer-{step}", border=False):
        box = st.text_area if check.kind == "text" else st.text_input
        box(LABELS[check.kind], key=key, placeholder=PLACEHOLDERS.get(check.kind, ""))
        st.form_submit_button("Submit" if check.kind == "text" else "Check", type="primary",
                              on_click=_send, args=(key, on_answer))  # fmt: skip


def _send(key: str, on_answer: Answer) -> None:
    """Callback of a form's button: the answer in widget ``key``, if any, to ``on_answer``."""
    answer = st.session_state.get(key)
    if answer is not None:
        on_answer(str(answer))


def _choice(options: Sequence[str], step: int, given: str | None, on_answer: Answer) -> None:
    """One option picked among ``options`` (its text is the answer)."""
    key = f"lesson-choice-{step}"
    if given in options and key not in st.session_state:
        st.session_state[key] = given
    with st.form(key=f"lesson-answer-{step}", border=False):
        st.radio("Your answer", options, index=None, key=key)
        st.form_submit_button("Check", type="primary", on_click=_send, args=(key, on_answer))


def head_grid_shape(check: vt.Check) -> tuple[list[int], int]:
    """``(layers, heads)`` the grid of a ``head`` check offers: the check's ``layers`` (every
    layer of its attention kind when none are given) and the kind's number of heads."""
    trace = caches.trace(check.model, check.args["sentence"])
    patterns = trace.get(check.args["attention"])
    if patterns is None:
        raise ValueError(f"{check.model} has no {check.args['attention']} attention.")
    n_layers, n_heads = patterns.shape[:2]
    return list(check.args.get("layers") or range(n_layers)), n_heads


def _head_grid(check: vt.Check, step: int, on_answer: Answer) -> None:
    """A button per head, a row per layer; a click answers with its "L1 H3"."""
    try:
        layers, n_heads = head_grid_shape(check)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    st.caption("Click a head, or type it below.")
    for layer in layers:
        for head, column in enumerate(st.columns(n_heads, gap="small")):
            label = f"L{layer} H{head}"
            column.button(label, key=f"lesson-head-{step}-{layer}-{head}", width="stretch",
                          on_click=on_answer, args=(label,))  # fmt: skip
