"""The app's own background threads that fill its caches before any session asks, kept quiet.

Streamlit logs "Thread '...': missing ScriptRunContext!" when a cache is read outside a page's
run. ``vt-warm`` (``python -m viz_transformer app``'s warm-up of Home, ``serve/replica.py``) and
``warm-traces`` (a class's graded sentences, ``classroom/lessons.py``) do that on purpose, so
their lines are dropped; any other thread's are kept, since there it is a bug.
"""

from __future__ import annotations

import logging
import threading

THREADS = frozenset({"vt-warm", "warm-traces"})
LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"
MISSING = "missing ScriptRunContext"


class _OwnThreadsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        own = threading.current_thread().name in THREADS
        return not (own and MISSING in record.getMessage())


def quiet_own_threads() -> None:
    """Drop Streamlit's missing-context warning for ``THREADS`` (once per process)."""
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(f, _OwnThreadsFilter) for f in logger.filters):
        logger.addFilter(_OwnThreadsFilter())
