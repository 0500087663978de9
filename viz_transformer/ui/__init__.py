"""The Streamlit layer under the pages; the only package of the library that imports Streamlit.

Pages import the submodules they use: ``caches`` (every ``st.cache_*`` function), ``state``
(session keys, the URL round trip), ``widgets`` (sidebar, charts, downloads, errors), and the
sections of the pages that have several (``attention_tabs``, ``decoder_view``, ``model_inputs``,
``saturation``).
"""
