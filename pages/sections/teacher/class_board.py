"""The Teacher page's board of a class: how to join (the code, the students' link and its QR
code), then, redrawn every few seconds (a fragment: the rest of the page stays), the teacher's
controls as they stand, the funnel, who is where (pseudonyms when names are hidden), the most
common wrong answers and the answers as CSV."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz_transformer as vt
from pages.sections.teacher.class_controls import status
from viz_transformer.classroom import Controls
from viz_transformer.classroom import links as class_links
from viz_transformer.figures.classroom import funnel_figure, qr_png, step_label
from viz_transformer.ui import class_store, widgets

REFRESH_S = 3  # seconds between redraws of the board
# the second x 1.6 on a projector, under the join box and the Pause row at 1024x768
FUNNEL_HEIGHT, PRESENTER_FUNNEL_HEIGHT = 360, 210
QR_PX, PRESENTER_QR_PX = 130, 160
LAST_MOVE = "last answer or move (UTC)"
JOIN_LINK = "vt-join-link"  # the students' link, 1.25 rem: 25 px on a projector
JOIN_CSS = (
    f"<style>.st-key-{JOIN_LINK} p, .st-key-{JOIN_LINK} code {{ font-size: 1.25rem; }}</style>"
)


def base_url() -> str:
    """The app's address as the browser sees it (``http://host:8501``)."""
    return st.context.url.split("/teacher")[0] if st.context.url else "http://localhost:8501"


def where_students_are(roster: pd.DataFrame, lesson: vt.Lesson, hidden: bool) -> pd.DataFrame:
    """The roster as the teacher reads it: name (its pseudonym when ``hidden``), the step open
    (number and title), answered and correct steps, the time of the last answer or move (not
    presence: an open page writes nothing). Names stay plain text: a table cell never renders
    markup."""
    titles = [step_label(i, s.title) for i, s in enumerate(lesson.steps, start=1)]
    return pd.DataFrame(
        {
            "student": roster["pseudonym" if hidden else "student"],
            "step": [titles[s - 1] if 1 <= s <= len(titles) else str(s) for s in roster["step"]],
            "answered": roster["answered"],
            "correct": roster["correct"],
            # a move or an answer writes it, not an open page: not presence
            LAST_MOVE: roster["seen"].dt.strftime("%H:%M:%S"),
        }
    )


def wrong_by_step(wrong: pd.DataFrame, lesson: vt.Lesson) -> pd.DataFrame:
    """The most common wrong answers, each with its step's number and title, and how many
    students gave it."""
    steps = [step_label(i, s.title) for i, s in enumerate(lesson.steps, start=1)]
    return pd.DataFrame(
        {
            "step": [steps[s - 1] for s in wrong["step"]],
            "wrong answer": wrong["answer"],
            "students": wrong["students"],
        }
    )


def summary(roster: pd.DataFrame, funnel: pd.DataFrame) -> None:
    """Three numbers: students joined, steps answered, share of graded steps answered right."""
    graded = funnel.dropna(subset=["correct"])
    answered, right = int(graded["answered"].sum()), int(graded["correct"].sum())
    numbers = {
        "students": len(roster),
        "answers (student x step)": int(funnel["answered"].sum()),
        "graded answers right": f"{right / answered:.0%}" if answered else "-",
    }
    for column, (label, value) in zip(st.columns(3), numbers.items(), strict=True):
        column.metric(label, value)


def csv_download(code: str, key: str) -> None:
    """Every answer as CSV, read when the button is clicked (not on every redraw)."""
    st.download_button(
        "Answers as CSV",
        lambda: class_store.store().teacher.answers(code, key).to_csv(index=False),
        f"class-{code}-answers.csv",
        "text/csv",
        key="class-csv",
        on_click="ignore",
        icon=":material/download:",
    )


def join_box(code: str, lesson: vt.Lesson) -> None:
    """The lesson's title and what students need to join: the code, the link and its QR code,
    large enough to read off a projector (the first screen at 1024x768 in presenter mode)."""
    students = class_links(base_url(), code, "")[0]
    text, qr = st.columns([5, 1], vertical_alignment="center")
    text.caption(widgets.literal(lesson.title))
    text.markdown(f"## Class code **{code}**")
    st.html(JOIN_CSS)
    projected = widgets.presenting()  # one line there: the funnel needs the room below
    scan = "" if projected else " or scan the code"
    text.container(key=JOIN_LINK).markdown(f"Join at `{students}`{scan}.")
    width = PRESENTER_QR_PX if projected else QR_PX
    qr.image(qr_png(students), width=width, alt=f"QR code of the students' link, {students}")


@st.fragment(run_every=REFRESH_S)
def live(code: str, key: str, lesson: vt.Lesson, drawn: Controls | None = None) -> None:
    """Class ``code`` as it is now; the ``key`` (a session of the teacher or a read-only one)
    was checked by the page, and is checked again at each redraw: a session ended (a new
    teacher's key, "Leave" on this browser) redraws the page, which then shows nothing of the
    class. When the stored controls differ from ``drawn``, those the page's own controls
    (Pause, the pace, Hide names) were drawn with, the whole page is drawn again: a command
    (``class pause``) or another tab changed them."""
    try:  # one transaction, one check of the key
        board = class_store.store().teacher.board(code, key)
    except PermissionError:  # a new teacher's key, or left on this browser: the page says so
        st.rerun(scope="app")
    except class_store.STORE_ERRORS as exc:  # the next redraw tries again
        widgets.show_error(class_store.message(exc))
        return
    if drawn is not None and board.controls != drawn:
        st.rerun(scope="app")
    controls, roster, funnel, wrong = board.controls, board.roster, board.funnel, board.wrong
    presenting = widgets.presenting()
    if not presenting:  # projected, the chart's title says it: the first screen has no room
        st.markdown(status(controls))
    height = PRESENTER_FUNNEL_HEIGHT if presenting else FUNNEL_HEIGHT
    note = status(controls, bold=False) if presenting else ""
    widgets.chart(funnel_figure(funnel, len(roster), height, note), f"class-{code}-funnel")
    summary(roster, funnel)
    # on a projector the names stay folded away (and pseudonyms when names are hidden)
    folded = widgets.presenting()
    with st.expander("Who is where") if folded else st.container():
        if not folded:  # the expander's label is the title
            st.subheader("Who is where", anchor=False)
        table = where_students_are(roster, lesson, controls.hide_names)
        st.dataframe(table, hide_index=True, width="stretch")
        st.subheader("Most common wrong answers", anchor=False)
        if wrong.empty:
            st.caption("No wrong answer yet.")
        else:
            st.dataframe(wrong_by_step(wrong, lesson), hide_index=True, width="stretch")
    csv_download(code, key)
    st.caption(f"Redrawn every {REFRESH_S} s.")
