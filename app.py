"""viz-transformer: the Streamlit entry point, a router. Each page draws the shared sidebar."""

import sys
from pathlib import Path

import streamlit as st

# a local file: an emoji or a :material: icon makes the browser fetch the favicon from a font host
ICON = Path(__file__).parent / "viz_transformer" / "ui" / "favicon.png"

st.set_page_config(page_title="viz-transformer", page_icon=str(ICON), layout="wide")

pages = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/attention_maps.py", title="Attention maps", icon=":material/grid_on:"),
    st.Page("pages/positional_encoding.py", title="Positional encoding", icon=":material/waves:"),
    st.Page(
        "pages/softmax_saturation.py", title="Softmax saturation", icon=":material/thermostat:"
    ),
    st.Page("pages/decoder_steps.py", title="Step-by-step decoder", icon=":material/steps:"),
    st.Page("pages/qkv_walkthrough.py", title="Q, K, V walkthrough", icon=":material/calculate:"),
    st.Page("pages/what_heads_do.py", title="What heads do", icon=":material/psychology:"),
    st.Page(
        "pages/heads_across_corpus.py", title="Heads across a corpus", icon=":material/dataset:"
    ),
    st.Page("pages/then_and_now.py", title="2017 vs today", icon=":material/history:"),
    st.Page("pages/watch_it_learn.py", title="Watch it learn", icon=":material/school:"),
    st.Page("pages/compare_models.py", title="Compare two models", icon=":material/compare:"),
]
lab = [  # a lesson's steps open the pages above
    st.Page("pages/lesson.py", title="Lesson", icon=":material/menu_book:"),
    st.Page("pages/teacher.py", title="Teacher", icon=":material/co_present:"),
]
page = st.navigation({"": pages, "Class": lab}, expanded=True)  # every page listed, none hidden
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
