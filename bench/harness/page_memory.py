"""One page of the app opened on a long sentence in a process of its own (issue 53): its peak memory
above the loaded model, its seconds, and the largest element it sends the browser.

``measure(page, tokens)`` starts ``python bench/harness/page_memory.py <page> <tokens>...``, which
loads ``smollm2`` (float32 on the CPU, as the app does), opens the page once on the model's own
example sentence in Streamlit's ``AppTest`` (so that imports, plotly, the first-touched weights and
the page's one-off work are not counted), then, for each length, frees what it can (``gc``,
``malloc_trim``), resets the process's peak resident set (``/proc/self/clear_refs``), opens the page
afresh on a text of exactly that many tokens and prints, as JSON: the peak minus the resident set
before it (``extra_gib``), what is still held after the run (``held_gib``), the seconds and CPU
seconds, the largest element of the page (``largest_bytes``: the protobuf message one update carries
to the browser, a chart's figure JSON included) and the page's errors and notes, so a page that
refuses a job before starting it says so.

The test ``tests/app/test_page_memory.py`` runs this script (never imports it) and
``bench/bench_pages.py`` writes its figures to docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MODEL = "smollm2"
# every page that reads the sidebar's sentence (2017 vs today, the corpus, lesson, teacher and
# live-training pages read something else)
PAGES = ("home", "attention_maps", "positional_encoding", "softmax_saturation", "decoder_steps",
         "qkv_walkthrough", "what_heads_do", "compare_models")  # fmt: skip
TIMEOUT_S = 900  # one page's run, in AppTest and around the child


def _elements(node: Any) -> list[Any]:
    """Every element under an AppTest node (blocks walked, elements kept)."""
    children = getattr(node, "children", None)
    if children is None:
        return [node]
    return [e for child in children.values() for e in _elements(child)]


def largest_element(at: Any) -> tuple[int, str]:
    """The size in bytes of the largest element the page drew (its protobuf message, which one
    update carries) and the element's type."""
    sizes = [
        (e.proto.ByteSize(), getattr(e, "type", "?"))
        for e in _elements(at._tree)
        if hasattr(getattr(e, "proto", None), "ByteSize")
    ]
    return max(sizes, default=(0, ""))


def _open(stem: str, text: str) -> Any:
    """The page ``stem`` run once in AppTest with ``MODEL`` and ``text`` in the sidebar."""
    from streamlit.testing.v1 import AppTest

    path = "app.py" if stem == "home" else f"pages/{stem}.py"  # Home's links need app.py's
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT_S)
    at.session_state["model"] = MODEL
    at.session_state["sentence"] = text
    at.run()
    return at


def _said(at: Any) -> dict[str, list[str]]:
    return {
        "exceptions": [str(e.value)[:500] for e in at.exception],
        "errors": [str(e.value)[:500] for e in at.error],
        "notes": [str(e.value)[:500] for e in [*at.warning, *at.info]],
    }


def child(stem: str, lengths: list[int]) -> list[dict[str, Any]]:
    """In this process: load, open the page on the example, then at each length (module doc)."""
    import viz_transformer as vt
    from bench.harness.models import text_of
    from bench.harness.rss import above, status_bytes, trim

    vt.prepare_model(MODEL)
    model = vt.load_model(MODEL)
    _open(stem, vt.model_info(MODEL).example)  # imports, first-touched weights, one-off work
    count = lambda t: len(model.tokenizer(t)["input_ids"])  # noqa: E731
    out = []
    for n in lengths:
        text = text_of(count, n)
        cpu = time.process_time()
        took, at = above(lambda: _open(stem, text))  # noqa: B023 (run at once)
        cpu = time.process_time() - cpu
        largest, element = largest_element(at)
        said = _said(at)
        del at
        trim()
        out.append(
            {
                "page": stem,
                "tokens": n,
                "extra_gib": took.extra / 2**30,
                "held_gib": (status_bytes("VmRSS") - took.before) / 2**30,
                "loaded_gib": took.before / 2**30,
                "seconds": took.seconds,
                "cpu_s": cpu,
                "largest_bytes": largest,
                "largest_element": element,
                "peak_reset": took.reset,
                **said,
            }
        )
    return out


def measure(
    stem: str, lengths: list[int], root: Path = ROOT, env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """``child`` in a fresh process importing the package at ``root``; ``env`` is added to the
    environment (a setting's ``VT_*`` variable)."""
    full = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(root)}
    full["VT_MAX_CHARS"] = "1000000"  # 8,000 of these short words are about 43,000 characters
    full.update(env or {})
    cmd = [sys.executable, str(Path(__file__).resolve()), stem, *map(str, lengths)]
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=full,
        cwd=root,
        check=False,
        timeout=TIMEOUT_S * (len(lengths) + 1),
    )
    if done.returncode:
        raise RuntimeError(f"{stem} at {lengths} tokens failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.path.insert(0, os.environ.get("PYTHONPATH", str(ROOT)).split(os.pathsep)[0])
    print(json.dumps(child(sys.argv[1], [int(n) for n in sys.argv[2:]])))
