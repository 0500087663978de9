"""viz-transformer: the Streamlit entry point, a router. Each page draws the shared sidebar."""

import streamlit as st

st.set_page_config(page_title="viz-transformer", page_icon="🔍", layout="wide")

pages = [
    st.Page("pages/home.py", title="Home", icon="🏠", default=True),
    st.Page("pages/attention_maps.py", title="Attention maps", icon="🔥"),
]
st.navigation(pages).run()
