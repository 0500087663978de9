"""viz-transformer: the Streamlit entry point, a router. Each page draws the shared sidebar."""

import sys
from pathlib import Path

import streamlit as st

from pages.nav import table

# a local file: an emoji or a :material: icon makes the browser fetch the favicon from a font host
ICON = Path(__file__).parent / "viz_transformer" / "ui" / "favicon.png"

st.set_page_config(page_title="viz-transformer", page_icon=str(ICON), layout="wide")

navigation = {  # every page of the one page table (pages/nav/table.py), under its heading
    group: [
        st.Page(entry.file, title=entry.title, icon=entry.icon, default=entry.default)
        for entry in entries
    ]
    for group, entries in table.groups().items()
}
page = st.navigation(navigation, expanded=True)  # every page listed, none hidden
# each page's own name in the browser's tab and a screen reader's title (WCAG 2.4.2)
st.set_page_config(page_title=f"{page.title} · viz-transformer")
# the first visit after the server starts imports torch and loads the model (seconds): draw the
# page's title at once, not a blank page, and remove it once the page has drawn its own
skeleton = st.empty()
if "viz_transformer.ui" not in sys.modules:
    with skeleton.container():
        st.title(page.title)
        st.info(
            "Starting: loading PyTorch and the model, once for the whole server (a few seconds)."
        )
try:
    page.run()
finally:
    skeleton.empty()
    # a Stop holds the page's long jobs for the one run it started (ui/jobs.py HOLD_KEY); only a
    # process that imported ui.jobs can have set it, and importing it here could fail after a
    # page that failed to import
    jobs = sys.modules.get("viz_transformer.ui.jobs")
    if jobs is not None:
        jobs.release_hold()
