"""viz-transformer: the Streamlit entry point, a router. Each page draws the shared sidebar."""

import streamlit as st

st.set_page_config(page_title="viz-transformer", page_icon="🔍", layout="wide")

pages = [
    st.Page("pages/home.py", title="Home", icon="🏠", default=True),
    st.Page("pages/attention_maps.py", title="Attention maps", icon="🔥"),
    st.Page("pages/positional_encoding.py", title="Positional encoding", icon="〰️"),
    st.Page("pages/softmax_saturation.py", title="Softmax saturation", icon="🌡️"),
    st.Page("pages/decoder_steps.py", title="Step-by-step decoder", icon="👣"),
    st.Page("pages/qkv_walkthrough.py", title="Q, K, V walkthrough", icon="🧮"),
]
st.navigation(pages).run()
