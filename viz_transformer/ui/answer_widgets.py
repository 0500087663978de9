"""The answer widgets of a lesson step's question, one per question kind: a head typed ("L1 H3")
or clicked in a grid of the kind's heads, a token, a number, an option, free text; and the
feedback on an answer. Answers are strings as the student gives them; ``vt.grade`` reads them."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

import viz_transformer as vt
from viz_transformer.course.question_kinds import QUESTION_KINDS
from viz_transformer.records.kinds import Head, head_label, parse_head_label
from viz_transformer.ui import caches, widgets

Answer = Callable[[str], None]
# an answer widget: (question, step, the last answer given or None, on_answer)
Widget = Callable[[vt.Question, int, "str | None", Answer], None]


def answer_box(question: vt.Question, step: int, given: str | None, on_answer: Answer) -> None:
    """Draw the answer widget of ``question`` (the ``step``-th of its lesson), the one its kind's
    row in ``QUESTION_KINDS`` names (looked up in ``WIDGETS``); an answer given calls
    ``on_answer(answer)`` (a callback: it runs before the page's next run).

    Args:
        question: the step's question.
        step: the step's index, which keys the widgets (each step keeps its own box).
        given: the student's last answer to this step, shown in the box again.
        on_answer: takes the answer as a string ("L1 H3", an option's text, what was typed).
    """
    if question.prompt:
        st.markdown(f"**{question.prompt}**")  # the lesson's own Markdown
    WIDGETS[QUESTION_KINDS[question.kind].widget](question, step, given, on_answer)


def head_answer(question: vt.Question, step: int, given: str | None, on_answer: Answer) -> None:
    """A head clicked in a grid of the question's heads, or typed ("L1 H3")."""
    _head_grid(question, step, given, on_answer)
    typed_answer(question, step, given, on_answer)


def typed_answer(
    question: vt.Question, step: int, given: str | None, on_answer: Answer, area: bool = False
) -> None:
    """A box to type the answer in (one line; ``area``: several), with the kind's label and
    placeholder from its row in ``QUESTION_KINDS``."""
    kind, key = QUESTION_KINDS[question.kind], f"lesson-typed-{step}"
    if given is not None and key not in st.session_state:
        st.session_state[key] = given  # a resumed session shows the last answer
    with st.form(key=f"lesson-answer-{step}", border=False):
        box = st.text_area if area else st.text_input
        box(kind.label, key=key, placeholder=kind.placeholder)
        st.form_submit_button(
            "Check" if kind.graded else "Submit",
            type="primary",
            on_click=_send,
            args=(key, on_answer),
        )
    if st.session_state.pop(f"{key}-blank", False):
        st.warning("Type an answer first: an empty box is not sent (your last answer stays).")


def free_answer(question: vt.Question, step: int, given: str | None, on_answer: Answer) -> None:
    """Free text in a box of several lines, kept, not graded."""
    typed_answer(question, step, given, on_answer, area=True)


def _send(key: str, on_answer: Answer) -> None:
    """Callback of a form's button: the answer in widget ``key``, if any, to ``on_answer``; a
    blank one is not sent (it would be graded wrong over the last answer) but noted, so the
    form says to type one."""
    answer = st.session_state.get(key)
    if isinstance(answer, str) and not answer.strip():
        st.session_state[f"{key}-blank"] = True
    elif answer is not None:
        on_answer(str(answer))


def choice_answer(question: vt.Question, step: int, given: str | None, on_answer: Answer) -> None:
    """One option picked among the question's options (its text is the answer)."""
    options, key = question.options, f"lesson-choice-{step}"
    if given in options and key not in st.session_state:
        st.session_state[key] = given
    with st.form(key=f"lesson-answer-{step}", border=False):
        st.radio("Your answer", options, index=None, key=key)
        st.form_submit_button("Check", type="primary", on_click=_send, args=(key, on_answer))


def head_grid_shape(question: vt.Question) -> tuple[list[int], int]:
    """``(layers, heads)`` the grid of a ``head`` question offers: the question's ``layers`` (every
    layer of its attention kind when none are given) and the kind's number of heads."""
    trace = caches.trace(question.model, question.args["sentence"])
    patterns = trace.get(question.args["attention"])
    if patterns is None:
        raise ValueError(f"{question.model} has no {question.args['attention']} attention.")
    n_layers, n_heads = patterns.shape[:2]
    return list(question.args.get("layers") or range(n_layers)), n_heads


def _head_grid(question: vt.Question, step: int, given: str | None, on_answer: Answer) -> None:
    """A row of heads per layer (one element per row: a class's many clicks at once stay cheap
    to draw); a click answers with its "L1 H3" and stays marked."""
    try:
        layers, n_heads = head_grid_shape(question)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    st.caption("Click a head, or type it below.")
    keys = [f"lesson-head-{step}-{layer}" for layer in layers]
    try:
        picked: Head | None = parse_head_label(given or "")
    except ValueError:  # no answer yet, or a typed one that names no head
        picked = None
    for layer, key in zip(layers, keys, strict=True):
        if key not in st.session_state:  # a resumed session marks the last answer
            st.session_state[key] = picked[1] if picked and picked[0] == layer else None
        st.pills(
            f"Layer {layer}",
            range(n_heads),
            format_func=lambda h, la=layer: head_label((la, h)),
            key=key,
            on_change=_head_picked,
            args=(key, layer, keys, on_answer),
            label_visibility="collapsed",
        )


def _head_picked(key: str, layer: int, keys: list[str], on_answer: Answer) -> None:
    """Callback of a layer's row: answer with the head picked, unmark the other rows."""
    head = st.session_state.get(key)
    if head is None:  # the marked head clicked again
        return
    for other in keys:
        if other != key:
            st.session_state[other] = None
    on_answer(head_label((layer, head)))


def show_grade(answer: str, grade: vt.Grade) -> None:
    """The feedback on ``answer`` (shown literally): green when right, red when wrong, yellow
    when it could not be read, blue for free text."""
    said = f"Your answer: **{widgets.literal(answer)}**"
    if grade.correct is None:
        st.info(f"{said}  \n{widgets.literal(grade.feedback)}")
    elif grade.correct:
        st.success(f"{said}  \n{widgets.literal(grade.feedback)}", icon=":material/check:")
    else:
        show = st.error if grade.readable else st.warning
        show(f"{said}  \n{widgets.literal(grade.feedback)}", icon=":material/close:")


# the answer widgets by name: a kind's row in QUESTION_KINDS names its widget (``KindRule.widget``)
WIDGETS: dict[str, Widget] = {
    w.__name__: w for w in (head_answer, typed_answer, choice_answer, free_answer)
}
