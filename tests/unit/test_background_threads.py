"""The app's own cache-filling threads (``vt-warm``, ``warm-traces``) lose Streamlit's
"missing ScriptRunContext!" warning; any other thread keeps it, and other warnings stay."""

from __future__ import annotations

import logging
import threading

from viz_transformer.ui.background import LOGGER, quiet_own_threads


def test_only_the_apps_own_threads_lose_the_missing_context_warning():
    quiet_own_threads()
    quiet_own_threads()  # once per process, however often it is called
    logger = logging.getLogger(LOGGER)
    assert sum(type(f).__name__ == "_OwnThreadsFilter" for f in logger.filters) == 1
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Keep()
    logger.addHandler(handler)
    try:

        def warn() -> None:
            name = threading.current_thread().name
            logger.warning("Thread '%s': missing ScriptRunContext! This warning ...", name)
            logger.warning("%s: another warning", name)

        for name in ("vt-warm", "warm-traces", "corpus-job"):
            thread = threading.Thread(target=warn, name=name)
            thread.start()
            thread.join()
    finally:
        logger.removeHandler(handler)
    assert seen == [
        "vt-warm: another warning",
        "warm-traces: another warning",
        "Thread 'corpus-job': missing ScriptRunContext! This warning ...",
        "corpus-job: another warning",
    ]
