"""The notebook widget's JavaScript in Chromium, on the page ``view.save`` writes: it follows the
system's dark mode and Colab's, and the style that hides the static snapshot leaves with the
last live view of it (after a kernel restart the snapshot shows again)."""

from __future__ import annotations

from pathlib import Path

import pytest

import viz_transformer as vt
from viz_transformer.testing.paper import tiny_paper_model

pytestmark = pytest.mark.needs("notebook")

RENDER = 'widget.render({ model, el: document.getElementById("view") });'
# the page's own render, and the widget kept so the test can render and dispose more views
KEEP = "window.vtWidget = widget; window.vtModel = model; window.vtFirst = " + RENDER


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    model = tiny_paper_model(n_heads=4, max_len=12)
    view = vt.head_view(vt.trace(model, "alpha beta gamma"))
    path = view.save(tmp_path_factory.mktemp("widget") / "view.html")
    text = path.read_text()
    assert RENDER in text
    path.write_text(text.replace(RENDER, KEEP))
    return path, view.uid


def _open(browser, path: Path, scheme: str):
    context = browser.new_context(color_scheme=scheme)
    page = context.new_page()
    page.goto(path.as_uri())
    page.locator(".vt-root[data-drawn]").wait_for(timeout=20_000)
    return context, page


def _luminance(page) -> float:
    rgb = page.evaluate(
        "() => getComputedStyle(document.querySelector('.vt-root')).backgroundColor"
    )
    r, g, b = (float(x) for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return 0.299 * r + 0.587 * g + 0.114 * b


def test_the_view_follows_the_systems_dark_mode_and_colabs(browser, saved):
    path, _ = saved
    context, page = _open(browser, path, "light")
    assert _luminance(page) > 200  # white
    page.evaluate("() => document.documentElement.setAttribute('theme', 'dark')")  # Colab's mark
    assert _luminance(page) < 60
    context.close()
    context, page = _open(browser, path, "dark")
    assert _luminance(page) < 60  # no theme of the page's own: the system's dark mode
    ink = page.evaluate("() => getComputedStyle(document.querySelector('.vt-label')).color")
    assert ink.replace(" ", "") == "rgb(236,236,236)"
    page.evaluate("() => document.documentElement.setAttribute('theme', 'light')")  # Colab light
    assert _luminance(page) > 200
    context.close()


def test_the_snapshot_style_leaves_with_the_last_live_view(browser, saved):
    path, uid = saved
    context, page = _open(browser, path, "light")
    count = f"() => document.querySelectorAll('style#{uid}-live').length"
    assert page.evaluate(count) == 1
    # the same widget displayed twice: two views, one style; disposing one keeps it
    page.evaluate(
        """() => {
          const el = document.createElement("div");
          document.body.appendChild(el);
          window.vtSecond = window.vtWidget.render({ model: window.vtModel, el });
        }"""
    )
    assert page.evaluate(count) == 1
    page.evaluate("() => window.vtSecond()")
    assert page.evaluate(count) == 1
    assert page.locator(f"style#{uid}-live").get_attribute("data-views") == "1"
    page.evaluate(
        """() => {
          const el = document.createElement("div");
          document.body.appendChild(el);
          window.vtWidget.render({ model: window.vtModel, el })();
        }"""
    )
    assert page.evaluate(count) == 1  # the page's own view still lives
    page.evaluate("() => window.vtFirst()")  # the last live view goes (a kernel restart)
    assert page.evaluate(count) == 0
    context.close()
