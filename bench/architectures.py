"""Every text architecture transformers ships, as a tiny random model: loaded through
``hf:<folder>``, traced on the default and the long-input path, every map compared with the same
model's eager ``output_attentions`` (``viz_transformer.testing.architecture_check``, what
``tests/integration/test_architectures.py`` asserts).

Writes the table (right / refused (why) / wrong / crash / no reference / not built, per
architecture) into ``docs/models.md`` between ``<!-- architectures -->`` markers, and the counts and
the time it took into ``docs/benchmarks.md``.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/architectures.py [TYPE ...]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.common import ROOT, replace_marked, table, write_section
from viz_transformer.testing.architecture_check import STATUSES, Outcome, check
from viz_transformer.testing.architectures import ARCHITECTURES

MODELS_DOC = ROOT / "docs" / "models.md"
MARK = "architectures"
INTRO = """The table below is written by `bench/architectures.py`: a tiny random model of every
causal-LM, masked-LM and sequence-to-sequence architecture of transformers' auto mappings
(`viz_transformer/testing/architectures.py`: 2 layers, width 64, 4 heads, a vocabulary of 128,
windows of 4 tokens under a 15-token input, 4 experts), loaded as `hf:<folder>`, traced on the
default path and on the long-input path (`VT_LAZY_ABOVE=1`), every map compared with the same
model's eager `output_attentions` within 1e-5 in float32. *right*: every map equal on both paths
(*long path: whole maps* where a long input keeps every map, not the queries and keys: a
family that computes attention in its own code, or an attention call the tiles cannot take);
*refused*: the loader or the trace says why (the model returns no softmax map, or one that is no
query x key map of the tokens); *wrong*: a map differs; *crash*: an error that is no message;
*no reference*: the tiny model's own eager forward does not run; *not built*: its default config
does not shrink to a text model here. `tests/integration/test_architectures.py` asserts the same
outcome for each."""


def _cell(text: str) -> str:
    """``text`` for a table cell: the temporary folder's path left out, pipes escaped."""
    return re.sub(r"/\S*?vt-architectures-[^/\s]+/", "", text).replace("|", "\\|")[:220]


def sweep(types: list[str]) -> tuple[list[Outcome], float]:
    warnings.filterwarnings("ignore")
    start = time.perf_counter()
    outcomes = []
    for t in types:
        outcomes.append(check(t))
        print(outcomes[-1].line()[:200], flush=True)
    return outcomes, time.perf_counter() - start


def write_table(outcomes: list[Outcome]) -> str:
    counts = collections.Counter(o.status for o in outcomes)
    summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    whole = sum(o.status == "right" and bool(o.detail) for o in outcomes)
    summary += f" ({whole} of the right keep whole maps on the long path)"
    rows = [[f"`{o.model_type}`", ARCHITECTURES[o.model_type], o.status, _cell(o.detail)]
            for o in outcomes]  # fmt: skip
    body = (
        f"<!-- {MARK} -->\n{INTRO}\n\n{len(outcomes)} architectures (transformers "
        f"{_version()}): {summary}.\n\n"
        + table(["type", "class", "result", "why"], rows)
        + f"\n<!-- /{MARK} -->"
    )
    heading = "## Every text architecture, checked"
    MODELS_DOC.write_text(replace_marked(MODELS_DOC.read_text(), MARK, body, heading))
    return summary


def _version() -> str:
    import transformers

    return transformers.__version__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("types", nargs="*", help="model types (default: every one)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    types = args.types or list(ARCHITECTURES)
    load = Path("/proc/loadavg").read_text().split()[:3]
    outcomes, seconds = sweep(types)
    if args.types:  # a subset: printed only
        return
    summary = write_table(outcomes)
    after = Path("/proc/loadavg").read_text().split()[:3]
    write_section(
        MARK,
        "Every text architecture against output_attentions",
        f"{len(types)} architectures in {seconds:.0f} s in one process (building the tiny "
        f"models included; load average {' '.join(load)} before, {' '.join(after)} after): "
        f"{summary}. The table: "
        "[models.md](models.md#every-text-architecture-checked).",
    )


if __name__ == "__main__":
    main()
