"""The notebooks in docs/notebooks/ run top to bottom in a real kernel (nbclient + ipykernel) and
print what their text says; the widgets they show are anywidget views of the trace."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "docs" / "notebooks"
# what each notebook's cells print, in order (a regular expression per printing cell)
PRINTS = {
    "quickstart.ipynb": [
        r"output: 2026-11-21\n\{'encoder': \(2, 4, 9, 9\), 'decoder': \(2, 4, 11, 11\), "
        r"'cross': \(2, 4, 11, 9\)\}",
        r"selected: \('cross', 0, 0\)",
        r"model view: \('encoder', 1, 3\) focus: \(1, 3\)",
        r"renderer: plotly_mimetype\+vt_offline",
    ],
    "hf_heads.ipynb": [
        r"encoder-decoder \('encoder', 'decoder', 'cross'\)\nsource: \('<s>', .*'</s>'\)",
        r"strongest previous-token head: L\d H\d \(0\.\d\d\)",
        r"selected: \('decoder', \d, \d\)",
        r"kinds: \['encoder'\] selected: \('encoder', 0, 0\)",
    ],
    "why_a_head_attends.ipynb": [
        r"encoder L0 H5: 'I' looks most at '\S+'; score -?\d+\.\d\d, largest parts: d\d+ ",
        r"cross L1 H2: '<s>' looks most at '\S+'; score",
        r"at '\.' it promotes \[.+\], suppresses \[.+\]",
    ],
}
WIDGET = "application/vnd.jupyter.widget-view+json"
VIEWS = {"quickstart.ipynb": 3, "hf_heads.ipynb": 3, "why_a_head_attends.ipynb": 1}  # shown


WHERE = "import viz_transformer\nprint(viz_transformer.__file__)"  # a last cell the test adds


def run(name: str):
    """Run a notebook as a user opening it where it lives: its own folder is the working
    directory and no ``PYTHONPATH`` helps the kernel find the package (it must be installed);
    a last cell prints where ``viz_transformer`` was imported from."""
    import nbclient
    import nbformat

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(WHERE))
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()
    return nb


def printed(nb) -> list[str]:
    """The text each code cell printed (cells that print nothing left out)."""
    out = []
    for cell in nb.cells:
        text = "".join(
            o.get("text", "")
            for o in cell.get("outputs", [])
            if o.output_type == "stream" and o.get("name") == "stdout"
        )
        if text.strip():
            out.append(text.strip())
    return out


@pytest.mark.slow
@pytest.mark.needs("notebook")
@pytest.mark.parametrize("name", sorted(PRINTS))
def test_every_cell_runs_and_prints_what_the_text_says(name, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    nb = run(name)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    *texts, where = printed(nb)
    imported = Path(where).resolve()
    assert imported == ROOT / "viz_transformer" / "__init__.py", (
        f"the kernel imported {imported}, not this checkout: run `pip install --no-deps -e .` "
        f"from {ROOT}"
    )
    assert len(texts) == len(PRINTS[name]), texts
    for text, pattern in zip(texts, PRINTS[name], strict=True):
        assert re.fullmatch(pattern + r".*", text, re.S), (pattern, text)
    views = [o for c in nb.cells for o in c.get("outputs", []) if WIDGET in o.get("data", {})]
    assert len(views) == VIEWS[name]
    warned = [o.text for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stderr"]
    if name == "quickstart.ipynb":  # the long input's view says what it shows, and Python warns
        assert any(
            "TruncatedInputWarning" in w and "first 256 of 2,049 tokens" in w for w in warned
        ), warned


def test_importing_the_library_imports_no_widget_library():
    code = "import sys, viz_transformer as vt; vt.head_view; print(sorted(m for m in sys.modules "
    code += "if m.split('.')[0] in {'anywidget', 'ipywidgets', 'traitlets'}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stderr
