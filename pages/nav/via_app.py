"""Imported first by every page, before anything that loads PyTorch: a server's first request
for a page's link goes through app.py, which shows the page's title and a "Starting" note at once.

Streamlit takes a ``pages/`` folder beside app.py for its old multipage layout until some run
calls ``st.navigation``: the first request after a server starts, when it is a link to a page
(a teacher's first link of the day is rarely Home), runs that page file alone, and its imports
(PyTorch, then the model) would keep the main area blank for seconds. Leaving that layout and
rerunning at once goes through app.py to the same page (page ids come from the URL path in both
layouts), before this page has imported anything heavy.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

if PagesManager.uses_pages_directory:
    PagesManager.uses_pages_directory = False
    st.rerun()
