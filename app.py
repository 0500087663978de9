"""viz-transformer: the Streamlit entry point, a router. Each page draws the shared sidebar."""

import streamlit as st

st.set_page_config(page_title="viz-transformer", page_icon="🔍", layout="wide")

pages = [
    st.Page("pages/attention_maps.py", title="Attention maps", icon="🔥", default=True),
]
st.navigation(pages).run()
