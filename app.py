"""viz-transformer: the Streamlit entry point. A router: shared sidebar, then the chosen page."""

import streamlit as st

from viz_transformer import ui

st.set_page_config(page_title="viz-transformer", page_icon="🔍", layout="wide")

pages = [
    st.Page("pages/attention_maps.py", title="Attention maps", icon="🔥", default=True),
]
page = st.navigation(pages)
ui.sidebar()
page.run()
