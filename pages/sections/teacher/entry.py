"""The ways into the Teacher page and out of it: opening a class on a lesson (no class in the
URL), a one-time link (``?class=CODE&once=TOKEN``) exchanged on the server for this browser's
session, the session kept for a reload, and "Leave this class on this browser".

No key reaches the browser. A one-time link opens the class once: its token, which the browser's
history and a proxy's log keep, is worthless once used. The page keeps the session it gave in
this Streamlit session and in a cookie (``vt_class_CODE``, the code as stored; ``settings.
teacher_minutes()``, this site only, ``SameSite=Strict``) and loads itself again without the
token in the same history entry (``location.replace``). Streamlit cannot make that cookie
``HttpOnly`` (a page sets cookies only through its JavaScript), so it holds a session, never the
key: good for one class, ended by "Leave", by a new teacher's key and by its time, on every
replica (``classroom/passes.py``). A link with a key in it (``&key=``) is refused."""

from __future__ import annotations

import json

import streamlit as st

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.classroom import links as class_links
from viz_transformer.classroom import passes
from viz_transformer.classroom.access import REPLACED, TEACHER, key_hash
from viz_transformer.ui import class_store, lesson_place, widgets

CREATE_ERROR = "_create_error"
KEYS = "_teacher_keys"  # class code -> this session's pass (a session token, never a key)
OPENED = "_teacher_links_opened"  # hashes of the one-time links this session used
HIDDEN = "_teacher_keys_hidden"  # codes whose session this browser was told to keep
NEW_KEY = "_teacher_new_key"  # class code -> a teacher's key made here, shown once
LEFT = "_teacher_left"  # the class code this browser just left
PENDING = "_teacher_cookie"  # the cookie script this run asks for: (code, session, seconds, leave)
COOKIE = "vt_class_"  # + the class code as stored
NO_KEY_IN_LINKS = (
    "A teacher's key is never taken from a link (a browser's history keeps every link it "
    "opens). Open a one-time link instead: `.venv/bin/python -m viz_transformer class link "
    "{code}` prints one (the key in VT_TEACHER_KEY)."
)
# the browser keeps the session for a reload (a cookie; max-age 0 deletes it) and, leaving a URL
# with a link's token or a key, loads the page again without it in the same history entry
_SCRIPT = """<script>(() => {{
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = {name} + '=' + encodeURIComponent({value}) + '; path=/; max-age={age}'
    + '; SameSite=Strict' + secure;
  const url = new URL(window.location.href);
  if ({leave} && (url.searchParams.has('once') || url.searchParams.has('key'))) {{
    url.searchParams.delete('once');
    url.searchParams.delete('key');
    window.location.replace(url.toString());
  }}
}})();</script>"""


def creator() -> None:
    """No class in the URL: open a class on a lesson; the page becomes its teacher's board."""
    if LEFT in st.session_state:
        code = st.session_state.pop(LEFT)
        _keep_in_browser(code, "", 0)
        st.success(
            f"You left class {code} on this browser: it holds nothing of the class now. To open "
            f"it again: `.venv/bin/python -m viz_transformer class link {code}`."
        )
    st.markdown(
        "Open a class on a lesson: students join with its code or link, and this page shows "
        "where each of them is. Keep the teacher's key it shows once (for the class commands)."
    )
    names = _in_course_order(widgets.or_stop(vt.lessons))  # the course's first lesson first
    with st.form("create-class", border=False):
        st.selectbox("Lesson", names, format_func=_title, key="class-lesson")
        st.form_submit_button("Open a class", type="primary", on_click=_create)
    if CREATE_ERROR in st.session_state:
        widgets.show_error(st.session_state.pop(CREATE_ERROR))


def _create() -> None:
    try:
        store = class_store.store()
        code, key = store.teacher.create(st.session_state["class-lesson"])
        session = store.access.open_session(code, key)
    except class_store.STORE_ERRORS as exc:
        st.session_state[CREATE_ERROR] = class_store.message(exc)
    else:
        st.session_state.setdefault(KEYS, {})[code] = session  # never in the URL
        st.session_state.setdefault(NEW_KEY, {})[code] = key
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


def enter(code: str) -> tuple[str, str] | None:
    """``(session, role)`` for class ``code`` (as stored): the session a one-time link in the
    URL gives, or the one this Streamlit session or this browser keeps, checked on every run,
    and ``"teacher"`` or ``"viewer"``; None, with a message and nothing of the class, without
    one that is still good."""
    kept = st.session_state.setdefault(KEYS, {})
    if st.query_params.get("key", ""):
        _keep_in_browser(code, "", 0, leave=True)  # out of this history entry too
        widgets.show_error(NO_KEY_IN_LINKS.format(code=code))
        return None
    once = st.query_params.get("once", "").strip()
    if once:
        opened = st.session_state.setdefault(OPENED, set())
        if key_hash(once) not in opened:  # not on a rerun before the browser loads the page
            try:  # again (the session it gave may have changed since: a new key)
                kept[code], _ = class_store.store().access.open_link(code, once)
            except (PermissionError, ValueError) as exc:
                _refused(code, exc)
                return None
            except class_store.STORE_ERRORS as exc:
                widgets.show_error(class_store.message(exc))
                return None
            opened.add(key_hash(once))
    session = kept.get(code) or st.context.cookies.get(COOKIE + code, "").strip()
    if not session:
        widgets.show_error(
            "This page needs the teacher's one-time link of the class (it ends with "
            f"`&once=...`). Nothing of a class is shown without it. `.venv/bin/python -m "
            f"viz_transformer class link {code}` prints a new one."
        )
        return None
    try:
        role = class_store.store().access.check_key(code, session)
    except PermissionError as exc:
        _refused(code, exc)
        return None
    except class_store.STORE_ERRORS as exc:
        widgets.show_error(class_store.message(exc))
        return None
    kept[code] = session
    _hide(code, session, bool(once))
    return session, role


def _refused(code: str, exc: BaseException) -> None:
    """What a refused link or an ended session says; this browser forgets the class."""
    st.session_state.setdefault(KEYS, {}).pop(code, None)
    st.session_state.setdefault(HIDDEN, set()).discard(code)
    _keep_in_browser(code, "", 0)  # the URL stays: a used link is worthless, the message stays
    text = str(exc)
    if text == REPLACED:  # a read-only link the teacher has since replaced
        text = "The teacher made a new read-only link for this class: ask the teacher for it."
    elif text.startswith("wrong teacher key"):
        text = "This browser's access to the class is not valid. " + passes.ENDED.split(": ")[-1]
    widgets.show_error(text[0].upper() + text[1:])


def _hide(code: str, session: str, linked: bool) -> None:
    """Ask for the script that keeps the session in this browser for a reload (once a session)
    and, when a one-time link opened the page, loads it again without its token in the same
    entry; ``this_browser``, the page's last element, draws it (an element that comes and goes
    above the others would make Streamlit draw them anew: an open expander would close)."""
    hidden = st.session_state.setdefault(HIDDEN, set())
    if linked or code not in hidden:
        hidden.add(code)
        st.session_state[PENDING] = (code, session, settings.teacher_minutes() * 60, linked)


def _keep_in_browser(code: str, value: str, seconds: int, leave: bool = False) -> None:
    name, value = json.dumps(COOKIE + code), json.dumps(value)
    script = _SCRIPT.format(name=name, value=value, age=seconds, leave=json.dumps(leave))
    st.html(script, unsafe_allow_javascript=True)


def is_teacher(role: str) -> bool:
    """Whether ``role`` may change the class (a read-only link may not)."""
    return role == TEACHER


def this_browser(code: str, session: str, teacher: bool, base: str) -> None:
    """The teacher's key made in this tab (never on a projector), a one-time link for another
    browser, and "Leave this class on this browser" (its session ends on every replica)."""
    pending = st.session_state.pop(PENDING, None)
    if pending:
        _keep_in_browser(*pending)
    private = teacher and not widgets.presenting()  # a projector shows neither key nor link
    made = st.session_state.get(NEW_KEY, {}).get(code)
    if made and private:
        with st.expander("The teacher's key, shown in this tab only: keep it", expanded=True):
            st.markdown(
                "For the class commands (`export VT_TEACHER_KEY=...`) and new one-time links. "
                "No link contains it; `class rotate` replaces it."
            )
            st.code(made, language=None)
    left, right = st.columns(2)
    if private and left.button(
        "One-time link for another browser",
        key="class-once",
        help="Opens this class once (a projector's PC, another laptop), then nothing.",
    ):
        try:
            once = class_store.store().access.one_time_link(code, session)
        except class_store.STORE_ERRORS as exc:
            widgets.show_error(class_store.message(exc))
        else:
            left.code(class_links(base, code, once)[1], language=None)
    right.button(
        "Leave this class on this browser",
        key="class-leave",
        icon=":material/logout:",
        on_click=_leave,
        args=(code, session),
        help="This browser forgets the class: a reload or Back shows nothing of it.",
    )


def _leave(code: str, session: str) -> None:
    try:
        class_store.store().access.leave(code, session)
    except class_store.STORE_ERRORS as exc:
        st.session_state[CREATE_ERROR] = class_store.message(exc)
    st.session_state.setdefault(KEYS, {}).pop(code, None)
    st.session_state.setdefault(HIDDEN, set()).discard(code)
    st.session_state[LEFT] = code
    st.query_params.clear()
