"""Why a head attends (issue 34): the score taken apart on smollm2, the walkthrough's why section's
first chart, and attention flow on paper-en-pt's encoder.

Run: ``OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/bench_why.py [--runs 3] [--flow-runs 1]``

- smollm2 at 256 tokens (the model loaded, i.e. warm): the capture (one pass recording every
  layer's q, k, z and stream, ``walkthrough.capture``), then on that record the head's scores and
  the three splits of one pair (last layer, last head, last query, its largest key; the input split
  answers "not available" for RoPE), and both together. ``vt.attention_scores`` + three
  ``vt.score_parts`` calls capture four times; the page captures once (cached) and splits.
- the why section's first chart: the score map (scores + figure) from the page's cached capture,
  and with the capture included (a new sentence), on smollm2 at 256 tokens and paper-en-pt's
  example.
- attention flow on paper-en-pt's encoder at 32 and 64 source tokens (``flow.MAX_TOKENS``).

Targets: scores + three splits < 2 s warm; first chart < 1.5 s warm.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LONG = "Attention lets every token look at every earlier token in one matrix product. "


def _text_of(model, n: int) -> tuple[str, int]:
    """A text of about ``n`` tokens for ``model`` (its example repeated, cut), and its length."""
    if hasattr(model, "tokenizer"):
        text = model.tokenizer.decode(model.tokenizer(LONG * 40)["input_ids"][:n])
        return text, len(model.encode_text(text))
    words = ((model.spec.example + " ") * 40).split()[: n * 2]
    ids, _ = model.source_ids(" ".join(words))
    while len(ids) > n:  # drop words until the source (</s> included) fits n tokens
        words = words[:-1]
        ids, _ = model.source_ids(" ".join(words))
    return " ".join(words), len(ids)


def _splits(cap) -> None:
    from viz_transformer.analysis import why

    layer, head = cap.n_layers - 1, cap.n_heads - 1
    scores = why.head_scores(cap, layer, head)
    query = scores.shape[0] - 1
    key = int(scores[query].argmax())
    for by in why.SPLITS:
        with contextlib.suppress(ValueError):  # the input split of a rotary model: refused
            why.split_score(cap, layer, head, query, key, by)


def _first_chart(cap) -> None:
    from viz_transformer.analysis import why
    from viz_transformer.figures import why as figures

    scores = why.head_scores(cap, 0, 0)
    figures.score_map(scores, cap.query_tokens, cap.key_tokens, "L0 H0", (0, 0)).to_json()


def _why_row(name: str, kind: str, n: int | None, runs: int) -> list[object]:
    import viz_transformer as vt
    from bench.harness.common import median_ms
    from viz_transformer.analysis import walkthrough

    model = vt.load_model(name, "cpu")
    text = _text_of(model, n)[0] if n else model.spec.example
    cap = walkthrough.capture(model, text, kind)
    capture_ms = median_ms(lambda: walkthrough.capture(model, text, kind), runs)
    split_ms = median_ms(lambda: _splits(cap), runs)
    chart_ms = median_ms(lambda: _first_chart(cap), runs)
    return [name, len(cap.query_tokens), f"{capture_ms:.0f} ms", f"{split_ms:.0f} ms",
            f"{capture_ms + split_ms:.0f} ms", f"{chart_ms:.0f} ms",
            f"{capture_ms + chart_ms:.0f} ms"]  # fmt: skip


def _flow_row(model, n: int, runs: int) -> list[object]:
    import viz_transformer as vt
    from bench.harness.common import median_ms
    from viz_transformer.analysis import flow

    text, size = _text_of(model, n)
    trace = vt.trace(model, text)
    took = median_ms(lambda: flow.attention_flow(trace, "encoder"), runs, warmup=0)
    return [size, trace.encoder.shape[0], f"{took / 1000:.1f} s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--flow-runs", type=int, default=1)
    args = parser.parse_args()
    import torch

    import viz_transformer as vt
    from bench.harness.common import table, write_section
    from viz_transformer.analysis import flow

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    vt.prepare_model("smollm2")
    load = os.getloadavg()[0]
    why_rows = [_why_row("smollm2", "decoder", 256, args.runs),
                _why_row("paper-en-pt", "encoder", None, args.runs)]  # fmt: skip
    paper = vt.load_model("paper-en-pt", "cpu")
    flow_rows = [_flow_row(paper, n, args.flow_runs) for n in (32, flow.MAX_TOKENS)]
    load_after = os.getloadavg()[0]
    header = [
        "model",
        "tokens",
        "capture",
        "scores + 3 splits",
        "total (target < 2 s)",
        "first chart (cached capture)",
        "first chart + capture (target < 1.5 s)",
    ]
    body = (
        "Scores and splits (the model loaded; medians of "
        f"{args.runs} runs after one warm-up):\n\n"
        + table(header, why_rows)
        + "\n\nScores + 3 splits: the last layer's last head, its last query and largest key; "
        "smollm2's input split is refused (RoPE) and costs nothing. `vt.attention_scores` + "
        "three `vt.score_parts` calls capture once each (four captures); the page captures once "
        "(cached) and draws from that record.\n\n"
        f"Attention flow, paper-en-pt encoder (the page offers it up to {flow.MAX_TOKENS} "
        "tokens):\n\n"
        + table(["tokens", "layers", "time"], flow_rows)
        + f"\n\n1-minute load average: {load:.1f} before, {load_after:.1f} after, on "
        f"{os.cpu_count()} cores shared with other work."
    )
    write_section("bench_why", "Why a head attends: score splits and attention flow (issue 34)",
                  body)  # fmt: skip


if __name__ == "__main__":
    main()
