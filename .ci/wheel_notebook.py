"""Run a notebook top to bottom in a kernel of this interpreter (the wheel's venv), from a folder
outside the checkout, and check: no cell raised, ``viz_transformer`` came from site-packages (the
wheel, not the checkout), the kernel's torch is the one given, and each plotly figure carries a
drawing that needs no kernel and no network (``text/html`` beside its JSON).

``python .ci/wheel_notebook.py NOTEBOOK TORCH_VERSION`` (used by ``.ci/wheel``)."""

from __future__ import annotations

import json
import sys

import nbclient
import nbformat

CHECK = """import importlib.metadata, json, viz_transformer
print(json.dumps([viz_transformer.__file__, importlib.metadata.version("torch")]))"""


def main(path: str, torch_version: str) -> int:
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(CHECK))
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600).execute()
    outputs = [o for cell in nb.cells for o in cell.get("outputs", [])]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors
    where, torch_seen = json.loads(outputs[-1]["text"])
    assert "site-packages" in where, f"viz_transformer came from {where}, not the wheel"
    assert torch_seen == torch_version, f"the kernel ran torch {torch_seen}, not {torch_version}"
    figures = [o["data"] for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "the notebook drew no plotly figure"
    assert all("text/html" in data for data in figures), "a figure has no offline drawing"
    print(f"quickstart ran on the wheel ({where}) with torch {torch_seen}: {len(figures)} figures")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
