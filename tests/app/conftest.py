"""Fixtures of the AppTest tier: open a page of the app, and read the plotly figures it drew."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

if TYPE_CHECKING:  # imported where used: without Streamlit this tier skips (tests/conftest.py)
    from streamlit.testing.v1 import AppTest

    from viz_transformer.classroom import ClassStore

ROOT = Path(__file__).resolve().parents[2]


def _decode_array(spec_array: dict | list) -> np.ndarray:
    if isinstance(spec_array, list):
        return np.array(spec_array, dtype=float)
    raw = np.frombuffer(base64.b64decode(spec_array["bdata"]), dtype=spec_array["dtype"])
    shape = spec_array.get("shape")
    return raw.reshape([int(s) for s in str(shape).split(",")]) if shape else raw


def _figures(at: AppTest) -> list[dict]:
    figs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    for fig in figs:  # a title set above its chart (too long for its width) kept in ``meta``
        layout = fig.setdefault("layout", {})
        moved = (
            (layout.get("meta") or {}).get("title")
            if isinstance(layout.get("meta"), dict)
            else None
        )
        if moved and not layout.get("title", {}).get("text"):
            layout.setdefault("title", {})["text"] = moved
    return figs


@pytest.fixture
def decode_array() -> Callable[[dict | list], np.ndarray]:
    """``decode_array(spec)``: a figure's array as numpy (plotly 7 writes arrays as
    ``{"dtype", "bdata", "shape"}``, short ones as lists)."""
    return _decode_array


@pytest.fixture
def figures() -> Callable[[AppTest], list[dict]]:
    """``figures(at)``: the plotly figures the page drew, as JSON dicts, in page order."""
    return _figures


@pytest.fixture
def server_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppTest runs of app.py go through app.py every time, as on a server (``_ServerLayout``);
    the layout flag is restored afterwards."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import app_test

    class _ServerLayout(PagesManager):
        """AppTest sets ``uses_pages_directory = None`` on its ``PagesManager`` before every
        run, so every run of app.py after the first ran the page file alone in the old
        page-folder layout (pages/ beside app.py) and never reached app.py's ``finally``; a
        server keeps what ``st.navigation`` set once. Through this subclass the reset lands on
        the subclass and the class Streamlit reads keeps the server's value."""

    monkeypatch.setattr(PagesManager, "uses_pages_directory", PagesManager.uses_pages_directory)
    monkeypatch.setattr(app_test, "PagesManager", _ServerLayout)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ClassStore]:
    """A class store of its own (SQLite in ``tmp_path``), the one the pages use too."""
    from viz_transformer.ui import class_store

    monkeypatch.setenv("VT_DATABASE_URL", f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    class_store.store.clear()
    yield class_store.store()
    class_store.store.clear()


@pytest.fixture
def open_via_app() -> Callable[[str, dict[str, str]], AppTest]:
    """``open_via_app(page, params)``: a new session of app.py with ``params`` in the URL (the
    default page first, which reads the URL once per session), then ``page`` (``pages/<name>.py``)
    through its navigation, as a link or a step's link opens it; run without an exception."""

    def open_(page: str, params: dict[str, str]) -> AppTest:
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params.update(params)
        at.run()
        at.switch_page(page).run()
        assert not at.exception, at.exception
        return at

    return open_


@pytest.fixture
def open_page(server_layout: None) -> Callable[..., AppTest]:
    """``open_page(path, model=None, params=None)``: the app's file ``path`` (``app.py``,
    ``pages/<name>.py``) in AppTest, with the URL's ``params`` and the sidebar's ``model`` set,
    run once without an exception."""

    def open_(path: str, model: str | None = None, params: dict[str, str] | None = None) -> AppTest:
        from streamlit.testing.v1 import AppTest

        app = AppTest.from_file(str(ROOT / path), default_timeout=60)
        app.query_params.update(params or {})
        if model:
            app.session_state["model"] = model
        app.run()
        assert not app.exception, app.exception
        return app

    return open_


def _data_downloads(at: AppTest) -> list:
    """The page's data downloads (JSON, NPZ), without every chart's "Save figure" menu."""
    return [b for b in at.get("download_button") if b.label not in FIGURE_FORMATS]


FIGURE_FORMATS = ("SVG", "PDF", "PNG")


@pytest.fixture
def data_downloads() -> Callable[[AppTest], list]:
    return _data_downloads
