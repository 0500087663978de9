"""The ways into the Teacher page: opening a class on a lesson (no class in the URL), and the key
of a class's link, checked, then kept in the session, never in a history entry of the browser.

The key is a password: anyone who reads it can pause, remove or close the class. A class opened
here never puts it in the URL (only the code). A teacher's (or read-only) link opened from
elsewhere has it in the URL: the page keeps the key in a cookie of this browser
(``vt_class_CODE``, 8 hours, this site only) and loads itself again without it in the same
history entry (``location.replace``), so no entry keeps it. (Taking it out of Streamlit's
query parameters instead pushes a new entry and leaves the key in the one before: a Back press
shows it.) A reload (F5), a new session, reads the key from that cookie, never from the URL."""

from __future__ import annotations

import json

import streamlit as st

import viz_transformer as vt
from viz_transformer.classroom.access import REPLACED, TEACHER
from viz_transformer.ui import class_store, lesson_place, widgets

CREATE_ERROR = "_create_error"
KEYS = "_teacher_keys"  # class code -> the key this session's link gave, once checked
HIDDEN = "_teacher_keys_hidden"  # codes whose key the browser has taken out of its history
COOKIE, COOKIE_S = "vt_class_", 8 * 3600  # the cookie that keeps a key for a reload, its life
# the browser keeps the key for a reload (a cookie) and, leaving a URL with the key, loads the
# page again without it in the same history entry; a wrong key's cookie is deleted (max-age 0)
_SCRIPT = """<script>(() => {{
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = {name} + '=' + encodeURIComponent({key}) + '; path=/; max-age={age}'
    + '; SameSite=Strict' + secure;
  const url = new URL(window.location.href);
  if ({leave} && url.searchParams.has('key')) {{
    url.searchParams.delete('key');
    window.location.replace(url.toString());
  }}
}})();</script>"""


def creator() -> None:
    """No class in the URL: open a class on a lesson; the page becomes its teacher's view."""
    st.markdown(
        "Open a class on a lesson: students join with its code or link, and this page shows "
        "where each of them is. Keep the teacher's link: its key is shown once."
    )
    names = _in_course_order(widgets.or_stop(vt.lessons))  # the course's first lesson first
    with st.form("create-class", border=False):
        st.selectbox("Lesson", names, format_func=_title, key="class-lesson")
        st.form_submit_button("Open a class", type="primary", on_click=_create)
    if CREATE_ERROR in st.session_state:
        widgets.show_error(st.session_state.pop(CREATE_ERROR))


def _create() -> None:
    try:
        code, key = class_store.store().create(st.session_state["class-lesson"])
    except class_store.STORE_ERRORS as exc:
        st.session_state[CREATE_ERROR] = class_store.message(exc)
    else:
        st.session_state.setdefault(KEYS, {})[code] = key  # never in the URL
        st.query_params.from_dict({"class": code})


def _in_course_order(names: list[str]) -> list[str]:
    """``names`` as the Lesson page lists them: the course in its order, then the lessons
    outside it (and those that do not load here) by title."""
    found = {name: widgets.or_none(lesson_place.lesson, name) for name in names}

    def place(name: str) -> tuple[bool, int, str]:
        order = getattr(found[name], "order", None)
        return order is None, order or 0, _title(name)

    return sorted(names, key=place)


def _title(name: str) -> str:
    found = widgets.or_none(lesson_place.lesson, name)
    return f"{found.title} ({name})" if found is not None else name


def access(code: str) -> tuple[str, str] | None:
    """``(key, role)`` for class ``code``: the key from the link, kept in this session, or kept
    by this browser for a reload, checked on every run, and ``"teacher"`` or ``"viewer"`` (a
    read-only link); None, with a message and nothing of the class, without a right key."""
    kept = st.session_state.setdefault(KEYS, {})
    linked = st.query_params.get("key", "").strip()
    key = linked or kept.get(code, "") or st.context.cookies.get(COOKIE + code, "").strip()
    if not key:
        st.error(
            "This page needs the teacher's link of the class (it ends with `&key=...`). "
            "Nothing of a class is shown without it."
        )
        return None
    try:
        role = class_store.store().check_key(code, key)
    except PermissionError as exc:
        kept.pop(code, None)
        _keep_in_browser(code, "", 0)
        replaced = str(exc) == REPLACED  # a read-only link the teacher has since replaced
        st.error(
            "The teacher made a new read-only link for this class: this one no longer opens "
            "it. Ask the teacher for the new one."
            if replaced
            else "The key in this link is not this class's teacher key. Nothing of the class "
            "is shown; open the teacher's link printed when the class was created."
        )
        return None
    except class_store.STORE_ERRORS as exc:
        widgets.show_error(class_store.message(exc))
        return None
    kept[code] = key
    _hide(code, key, bool(linked))
    return key, role


def _hide(code: str, key: str, linked: bool) -> None:
    """The script that keeps the key in this browser for a reload (once a session) and, when the
    key came in the URL, loads the page again without it in the same history entry."""
    hidden = st.session_state.setdefault(HIDDEN, set())
    if linked or code not in hidden:
        hidden.add(code)
        _keep_in_browser(code, key, COOKIE_S, leave=linked)


def _keep_in_browser(code: str, key: str, seconds: int, leave: bool = False) -> None:
    name, key = json.dumps(COOKIE + code), json.dumps(key)
    script = _SCRIPT.format(name=name, key=key, age=seconds, leave=json.dumps(leave))
    st.html(script, unsafe_allow_javascript=True)


def is_teacher(role: str) -> bool:
    """Whether ``role`` may change the class (a read-only link may not)."""
    return role == TEACHER
