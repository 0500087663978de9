"""The Streamlit layer under the pages; the only package of the library that imports Streamlit.

It holds what several pages share: the caches of models, traces and figures (``caches`` and the
``*_caches`` modules), the session and its URL (``state``, ``callbacks``), the sidebar, the
widgets and what every chart carries (its description, its numbers, its export), long jobs with a
Stop button, and a student's or a class's place in a lesson. The "Folders" table of
docs/architecture.md says in one sentence what each module is for (this docstring names none, so
it cannot fall behind). A section private to one page lives in ``pages/sections/<page>/``.
"""
