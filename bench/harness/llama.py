"""A Llama-class decoder at the published Llama-3-8B size, random weights, saved as a Hugging Face
folder that the app loads as ``hf:<folder>`` (issue 43), timed per length (``length_row``); the
builders live in ``viz_transformer.testing.llama``.

``LLAMA_3_8B`` is Meta's published configuration (32 layers, 32 query heads sharing 8 key/value
heads, d_model 4096, SwiGLU 14,336, RoPE theta 500,000, 128,256 tokens); ``TINY_LLAMA`` the same
shape scaled down, so the code path runs on a CPU in the tests. The tokenizer is word-level over
``WORDS`` (one token per word, a ``<|begin_of_text|>`` in front): the texts of the benchmark are
exactly ``n`` tokens, and the embedding keeps the published vocabulary size so the weights are
the real size. The weights are drawn on the target device in the target dtype (an 8B model in
float32 on the CPU first would take 32 GB and minutes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch

import viz_transformer as vt
from bench.harness.common import sync, verdict
from bench.harness.models import text_of
from bench.harness.rss import peak_bytes, reset_peak
from viz_transformer.testing.llama import (
    LLAMA_3_8B,
    SIZES,
    STANDIN_LLAMA,
    TINY_LLAMA,
    build_llama,
    word_tokenizer,
)

__all__ = ["LLAMA_3_8B", "SIZES", "STANDIN_LLAMA", "TINY_LLAMA", "build_llama", "word_tokenizer"]

LLAMA_LENGTHS = (8192, 32768)
LONG = 32_768  # above it the row reads one layer's heads and a 1,024 x 1,024 window (issue 46)
WINDOW = 1024
TARGETS_S = {"first map": 2.0, "overview": 30.0, "split": 1.0, "writes": 1.0,
             "window": 1.0, "one layer": 60.0}  # one H100 (issues 43, 46)  # fmt: skip
PEAK_TARGET_GIB = 40.0
SPLITS = ("dimension", "input", "component")
LLAMA_COLUMNS = [
    "tokens", "trace + first head map s", "overview of every head s (one layer's above 32,768)",
    "1,024 x 1,024 window s", "one score split s", "what a head writes s",
    "peak memory in the row (weights included)",
]  # fmt: skip


def llama_rows(
    device: str, lengths: list[int], folder: Path, size: str
) -> tuple[str, list[list[object]]]:
    """Build ``SIZES[size]`` on ``device`` in bfloat16, load it back through ``hf:<folder>``
    with ``dtype="bfloat16"`` (the app's loader), then ``length_row`` per length.

    Returns:
        a line on the model and its load, and one row per length (``LLAMA_COLUMNS``).
    """
    start = time.perf_counter()
    path = build_llama(folder / size, size, max(lengths), device)
    built = time.perf_counter() - start
    loaded, model = _timed(partial(vt.load_model, f"hf:{path}", device, "bfloat16"), device)
    params = sum(p.numel() for p in model.module.parameters())
    about = (
        f"{size}: {_count(params)} parameters in bfloat16, built on {device} and saved in "
        f"{built:.0f} s, loaded through hf:<folder> in {loaded:.1f} s"
    )
    return about, [length_row(model, n, device) for n in lengths]


def length_row(model: vt.LoadedModel, n: int, device: str) -> list[object]:
    """At ``n`` tokens: trace + the first head map (figure JSON), the overview of every head
    (block maxima; above ``LONG`` tokens every head of layer 0 instead), a ``WINDOW`` x ``WINDOW``
    window of the last layer's head 5 at full resolution, the score of the last query on key 1
    in that head split every way the model allows, what that head writes there, and the peak
    memory in the row (weights included; on the CPU the process's peak resident set, reset
    where Linux allows). A cell that fails names the exception's class (``OutOfMemoryError``, ...)
    and the row goes on; a split the model does not have says ``n/a``."""
    from viz_transformer.figures.attention import head_figure, overview_figure

    gpu = device.startswith("cuda")
    _reset_peak(gpu)
    text = text_of(lambda t: len(model.tokenizer(t)["input_ids"]), n)
    layers = model.facts.layers["decoder"]
    where = ("decoder", layers - 1, 5, n - 1)  # kind, layer, head, query
    held: dict[str, Any] = {}

    def first() -> None:
        held["trace"] = _first_map(model, text, head_figure)

    def overview() -> None:
        if n <= LONG:
            return _json(overview_figure, held["trace"], "decoder")
        arr = held["trace"].decoder
        return [arr.reduced(0, h, 128) for h in range(arr.shape[1])]

    def window() -> Any:
        size, q0 = min(WINDOW, n), n - min(WINDOW, n)
        return _json(head_figure, held["trace"], "decoder", layers - 1, 5, False, (q0, q0, size))

    cells: list[object] = [n, _attempt(first, "first map", device)]
    if "trace" in held:
        cells += [_attempt(overview, "overview" if n <= LONG else "one layer", device)]
        cells += [_attempt(window, "window", device)]
    else:
        cells += ["no trace", "no trace"]
    held.clear()
    splits = [_split(model, text, where, by, device) for by in SPLITS]
    cells.append("; ".join(splits))
    cells.append(_attempt(partial(vt.head_writes, model, text, *where), "writes", device))
    return [*cells, _peak(gpu)]


def _attempt(fn: Callable[[], Any], what: str, device: str) -> str:
    """``fn``'s seconds (and its target on a GPU), or what it raised, by class name."""
    try:
        seconds, _ = _timed(fn, device)
    except Exception as exc:  # the row reports it and goes on (out of memory, a bug)
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
        return f"failed: {type(exc).__name__}"
    return _cell(seconds, what, device.startswith("cuda"))


def _split(model: vt.LoadedModel, text: str, where: tuple, by: str, device: str) -> str:
    try:
        vt.score_parts(model, text, *where, 1, by=by)  # warm: the first split pays the capture
    except ValueError:  # no such split for this model (RoPE: no input split)
        return f"{by} n/a"
    except Exception as exc:
        return f"{by} failed: {type(exc).__name__}"
    cell = _attempt(partial(vt.score_parts, model, text, *where, 1, by=by), "split", device)
    return f"{by} {cell}"


def _count(params: int) -> str:
    return f"{params / 1e9:.2f} B" if params >= 1e8 else f"{params / 1e6:.2f} M"


def _timed(fn: Callable[[], Any], device: str) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - start, out


def _cell(seconds: float, what: str, gpu: bool) -> str:
    """Seconds, with the H100 target and its verdict on a GPU."""
    if not gpu:
        return f"{seconds:.2f}"
    return f"{seconds:.2f} (< {TARGETS_S[what]:g}: {verdict(seconds, TARGETS_S[what])})"


def _first_map(model: vt.LoadedModel, text: str, head_figure: Callable[..., Any]) -> Any:
    trace = model.trace(text)
    _json(head_figure, trace, "decoder", 0, 0)
    return trace


def _json(figure: Callable[..., Any], *args: Any) -> str:
    return figure(*args).to_json()


def _reset_peak(gpu: bool) -> None:
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    else:
        reset_peak()


def _peak(gpu: bool) -> str:
    if not gpu:
        return f"{peak_bytes() / 2**30:.2f} GiB (RSS)"
    peak = torch.cuda.max_memory_allocated() / 2**30
    return f"{peak:.1f} GiB (< {PEAK_TARGET_GIB:g}: {verdict(peak, PEAK_TARGET_GIB)})"
