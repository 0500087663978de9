"""The Streamlit layer under the pages; the only package of the library that imports Streamlit.

It holds what several pages share: ``caches`` (the ``st.cache_*`` functions of models, traces
and figures; ``head_caches`` and ``compare_caches`` for their experiments), ``state`` (session
keys, the URL round trip), ``callbacks`` (what changes the model and sentence), ``sidebar``,
``widgets`` (headers, charts, downloads, errors), ``choice`` (pickers), ``switch`` (the nearest
model that has what a page shows) and ``jobs`` (long computations with a Stop button). A
section private to one page lives beside it in ``pages/sections/``.
"""
