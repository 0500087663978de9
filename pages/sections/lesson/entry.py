"""The ways into a lesson on the Lesson page: the lessons to follow alone and a class code (no
lesson in the URL), a student's name on the class link, and the place a student's token names."""

from __future__ import annotations

import streamlit as st

import viz_transformer as vt
from viz_transformer.ui import class_place, class_store, lesson_place, widgets

JOIN_ERROR = "_join_error"


def chooser() -> None:
    """No lesson in the URL: the lessons to follow alone, and a field for a class code."""
    st.title("Lesson")
    st.markdown("Follow a lesson on your own, or join your class with the code your teacher gives.")
    with st.form("join-code", border=False):
        st.text_input("Class code", max_chars=16, placeholder="K7QX2M", key="class-code")
        st.form_submit_button("Join the class", type="primary", on_click=_to_class)
    listed, missing = _listed(widgets.or_stop(vt.lessons))
    course = [found for found in listed if found.order is not None]
    st.subheader("The course", anchor=False)
    st.caption("Follow the lessons in this order, or start where your prerequisites allow.")
    titles = {found.name: found.title for found in listed}
    for found in course:
        _entry(found, titles)
    others = [found for found in listed if found.order is None]
    if others or missing:
        st.subheader("More lessons", anchor=False)
    for found in others:
        _entry(found, titles)
    for name, why in missing.items():
        st.caption(f"**{widgets.literal(name)}** cannot open here: {widgets.literal(why)}")


def _listed(names: list[str]) -> tuple[list[vt.Lesson], dict[str, str]]:
    """The lessons that load, in course order (a lesson outside the course after, by title),
    and name -> why for those that do not (a model this machine lacks)."""
    found, missing = [], {}
    for name in names:
        try:
            found.append(lesson_place.lesson(name))
        except widgets.LOAD_ERRORS as exc:
            missing[name] = str(exc).splitlines()[0]
    order = lambda f: (f.order is None, f.order or 0, f.title)  # noqa: E731
    return sorted(found, key=order), missing


def _entry(found: vt.Lesson, titles: dict[str, str]) -> None:
    """One lesson: a button that starts it, its topic, minutes, steps and model, what it needs
    first, and its goals."""
    number = f"{found.order}. " if found.order is not None else ""
    st.button(
        f"{number}{found.title}",
        key=f"start-{found.name}",
        on_click=st.query_params.from_dict,
        args=({"lesson": found.name},),
    )
    facts = [
        found.topic,
        f"{found.minutes} min" if found.minutes else "",
        f"{len(found.steps)} steps",
        f"on {found.model}",
    ]
    after = ", ".join(titles.get(p, p) for p in found.prerequisites)
    line = " · ".join(widgets.literal(f) for f in facts if f)
    st.caption(line + (f" · after: {widgets.literal(after)}" if after else ""))
    if found.goals:
        with st.expander("Goals", expanded=False):
            st.markdown("\n".join(f"- {widgets.literal(goal)}" for goal in found.goals))


def _to_class() -> None:
    code = st.session_state.get("class-code", "").strip().upper()
    if code:
        st.query_params.from_dict({"class": code})


def join_form(code: str) -> None:
    """A student's first visit with the class link: a display name, once."""
    found = class_store.or_stop(lambda: class_store.class_lesson(code))
    st.title(found.title)
    controls = class_store.or_stop(class_store.store().teacher.controls, code)
    if controls.closed:  # said before any form
        st.info(
            f"Class **{widgets.literal(code)}** is closed: it takes no more students. "
            "Ask your teacher for the code of an open class."
        )
        return
    st.markdown(f"Class **{widgets.literal(code)}**. Your teacher sees the name you type here.")
    with st.form("join-name", border=False):
        st.text_input(
            "Your name",
            max_chars=40,
            placeholder="a name or a nickname",
            key="name",
            autocomplete="name",
        )
        st.form_submit_button("Join", type="primary", on_click=_join, args=(code,))
    if JOIN_ERROR in st.session_state:
        widgets.show_error(st.session_state.pop(JOIN_ERROR))


def _join(code: str) -> None:
    try:
        class_place.join(code, st.session_state.get("name", ""))
    except class_store.STORE_ERRORS as exc:
        st.session_state[JOIN_ERROR] = class_store.message(exc)


def class_student(code: str, token: str) -> class_place.ClassPlace:
    """The student's place in the class, or a message and a way to join again."""
    try:
        return class_place.in_class(code, token)
    except class_store.STORE_ERRORS as exc:
        widgets.show_error(class_store.message(exc))
        st.button("Join again with a name", on_click=st.query_params.pop, args=("student",))
        st.stop()
        raise  # unreachable: st.stop() raises
