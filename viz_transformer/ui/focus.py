"""After an action that changes part of a page (a lesson's Next, Back or Check), the keyboard
focus and the view move to what changed: a callback asks (``request``), the part is drawn inside
``anchor``, and ``apply`` at the end of the run adds a small script that scrolls it into view and
focuses it (its heading or alert, so a screen reader reads it). Without a request nothing moves:
an ordinary rerun keeps the reader where they are."""

from __future__ import annotations

import json

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

REQUEST_KEY = "_vt_focus"  # (anchor, where it lands, a counter making each script new)
PREFIX = "vt-focus-"
# find the anchor (the run may still be drawing it), bring it into view, focus its first
# heading or alert (made focusable by script, not by Tab), else the anchor itself
_SCRIPT = """<script>(() => {{
  const where = {where}; let tries = 0;
  const go = () => {{
    const box = document.querySelector('.st-key-' + where.name);
    if (!box) {{ if (tries++ < 60) setTimeout(go, 50); return; }}
    const target = box.querySelector('[role="alert"], h1, h2, h3') || box;
    target.setAttribute('tabindex', '-1');
    box.scrollIntoView({{block: where.block}});
    target.focus({{preventScroll: true}});
  }};
  go();
}})(); /* request {count} */</script>"""


def request(name: str, block: str = "start") -> None:
    """Ask the next run to move the focus and the view to the anchor ``name`` (a callback);
    ``block`` is where the anchor lands in the view (``scrollIntoView``: start, center)."""
    count = st.session_state.get(REQUEST_KEY, ("", "", 0))[2] + 1
    st.session_state[REQUEST_KEY] = (name, block, count)


def anchor(name: str) -> DeltaGenerator:
    """The container that the focus moves to when ``name`` is requested."""
    return st.container(key=f"{PREFIX}{name}")


def apply() -> None:
    """Move the focus to the anchor requested since the last run, if any (the page calls it
    last, when every anchor is drawn)."""
    name, block, count = st.session_state.get(REQUEST_KEY, ("", "", 0))
    if not name:
        return
    st.session_state[REQUEST_KEY] = ("", "", count)
    where = json.dumps({"name": f"{PREFIX}{name}", "block": block})
    st.html(_SCRIPT.format(where=where, count=count), unsafe_allow_javascript=True)
