"""A head's page over a corpus (issue 34 point 3): the one pass over sampled sentences
(``head_page.sample_traces``, once per model and corpus) and then one head's token pairs and
query-key distances from those traces (``head_page.head_pass``, per head), on ``paper-en-pt`` over
the built-in 1,000-sentence corpus, warm (the model loaded and traced once before), one thread.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

import viz_transformer as vt
from bench.harness.common import table, write_section
from viz_transformer.analysis.corpus import head_page
from viz_transformer.text import corpora

MODEL = "paper-en-pt"
HEADS = (("cross", 1, 3), ("encoder", 5, 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sample", type=int, default=head_page.SAMPLE)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    model = vt.load_model(MODEL, "cpu")
    sentences = corpora.builtin_sentences()
    sample = [sentences[i] for i in head_page.sample_ids(len(sentences), args.sample)]
    vt.trace(model, sample[0])  # first-call costs out of the timings
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        traces = head_page.sample_traces(model, sample)
        times.append(time.perf_counter() - start)
    rows = [["the pass (every head)", len(sample), "", f"{min(times):.2f}",
             f"{sorted(times)[len(times) // 2]:.2f}", "", ""]]  # fmt: skip
    for kind, layer, head in HEADS:
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            result = head_page.head_pass(traces, kind, layer, head)
            times.append(time.perf_counter() - start)
        top = result.pairs.iloc[0]
        peak = int(result.offsets[result.mass.argmax()])
        rows.append([f"{kind} L{layer} H{head}", len(sample), f"{result.rows:,}",
                     f"{min(times):.3f}", f"{sorted(times)[len(times) // 2]:.3f}",
                     f"{top['query']} → {top['key']} ({top['share']:.1%})", peak])  # fmt: skip
    header = ["head", "sentences", "query rows", "best s", "median s", "top pair", "peak offset"]
    note = (
        f"Load average when it ended: {os.getloadavg()[0]:.1f}. The page runs the pass as a "
        "stoppable job with a progress bar once per model and corpus (then cached); each head "
        "after that costs its head_pass row."
    )
    body = table(header, rows) + "\n\n" + note
    write_section("bench_corpus_head", "A head's page over a corpus: the sampled pass", body)


if __name__ == "__main__":
    main()
