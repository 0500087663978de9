"""Search the built-in sentences for one where a single head changes the default model's output.

For the model (default: the app's default model), its example sentence and then the twenty
everyday sentences (``training.en_pt.everyday``) are tried in order; in each, for every attention
kind, the three most important heads (``vt.head_importance``) are zero-ablated one at a time, and
the first that changes the greedy output is written to ``<weights folder>/ablation_demo.json``.
What heads do pre-fills it ("Try: one head changes the output"), so a class sees an ablation
break the translation with one click. Issue 28: the sentence is found by this search, not by hand.

    OMP_NUM_THREADS=1 python bench/ablation_demo.py [--model paper-en-pt]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # ``python bench/...``

import viz_transformer as vt
from viz_transformer.analysis import effects
from viz_transformer.training.en_pt.everyday import EVERYDAY


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=vt.default_model())
    args = parser.parse_args()
    model = vt.load_model(args.model)
    if not isinstance(model.spec.path, Path):
        print(f"error: {args.model} has no weights folder to write the demo into", file=sys.stderr)
        return 1
    sentences = [model.spec.example, *EVERYDAY]
    start = time.perf_counter()
    demo = effects.search_demo(model, sentences, model.facts.kinds)
    seconds = time.perf_counter() - start
    if demo is None:
        print(f"error: no single head changes {args.model}'s output on the built-in sentences",
              file=sys.stderr)  # fmt: skip
        return 1
    path = effects.save_demo(demo, model.spec.path)
    print(f"{demo.text!r}: {demo.kind} L{demo.heads[0][0]} H{demo.heads[0][1]} ({demo.mode})")
    print(f"  normal:  {demo.normal}\n  ablated: {demo.ablated}")
    print(f"searched {sentences.index(demo.text) + 1} of {len(sentences)} sentences in "
          f"{seconds:.1f} s; wrote {path}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
