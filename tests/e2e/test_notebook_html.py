"""The quickstart saved as a page: docs/library.md's export command, run as written, gives an HTML
file that Chromium draws whole with every request that is not the file itself refused: the two
plotly figures drawn by the plotly.js the notebook carries, the three views as their snapshots,
and not one request off the machine (nbconvert's own template asks for require.js, MathJax and
the widgets' embed script from CDNs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.needs("notebook"), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "docs" / "notebooks" / "quickstart.ipynb"
# the ```bash block of docs/library.md that runs nbconvert
RECIPE = re.compile(r"```bash\n\s*(jupyter nbconvert --to html .*?)\n\s*```", re.S)


def recipe() -> str:
    """The export command of docs/library.md, its continuation lines joined."""
    found = RECIPE.search((ROOT / "docs" / "library.md").read_text(encoding="utf-8"))
    assert found, "docs/library.md has no `jupyter nbconvert --to html` command"
    return re.sub(r"\\\n\s*", "", found.group(1))


def test_the_recipe_uses_the_offline_template():
    assert "--execute quickstart.ipynb" in recipe() and "HTML_TEMPLATE" in recipe()


def test_the_exported_quickstart_draws_whole_with_the_network_blocked(tmp_path, browser):
    shutil.copy(QUICKSTART, tmp_path)
    bin_dir = str(Path(sys.executable).parent)  # `jupyter` and `python` of this environment
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        ["bash", "-c", recipe()], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page_file = tmp_path / "quickstart.html"
    text = page_file.read_text(encoding="utf-8")
    assert not re.findall(r"<script[^>]*\ssrc=[\"']https?:", text)  # no script from a server
    refused: list[str] = []

    def route(r) -> None:
        url = r.request.url
        if url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            refused.append(url)
            r.abort()

    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.route("**/*", route)
    page = context.new_page()
    page.goto(page_file.as_uri(), wait_until="load")
    page.wait_for_function(
        "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2", timeout=60_000
    )
    drawn = page.evaluate(
        """() => ({
          figures: document.querySelectorAll('.js-plotly-plot').length,
          maps: document.querySelectorAll('.js-plotly-plot .hm image').length,
          snapshots: [...document.querySelectorAll('.jp-OutputArea-output svg, img')]
            .filter((n) => n.getBoundingClientRect().width > 100).length,
        })"""
    )
    page.wait_for_timeout(500)  # anything a script asks for late is refused and counted too
    context.close()
    assert refused == []
    assert drawn["figures"] == 2 and drawn["maps"] >= 2, drawn
    assert drawn["snapshots"] >= 3, drawn
