"""A classroom on one cached model (issue 6): 16 threads x 50 different sentences equal the
sequential results exactly, leave no hook function active and no torch hook registered, and
1,000 more traces after a warm-up do not grow the process's memory."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from torch import nn
from torch.nn.modules import module as torch_module

import viz_transformer as vt
from viz_transformer.networks.hooks import active_hook_names
from viz_transformer.training.tasks.catalog import TASKS, pairs

pytestmark = pytest.mark.slow

N_THREADS, PER_THREAD = 16, 50
ENGLISH = [  # short, plain sentences: the Bergamot translator decodes each in ~0.1 s
    "My friend found the kitchen near the old house.",
    "We talked about the garden all evening.",
    "Nobody wanted to clean the window today.",
    "The doctor arrived late because of the rain.",
    "Our teacher reads a book every week.",
    "She left her bicycle next to the river.",
    "They climbed the mountain in two days.",
    "I wrote a letter to my brother.",
]


def _torch_hooks(module: nn.Module) -> list[int]:
    """How many torch hooks each submodule has, plus the global ones: captures must add none."""
    per_module = [
        len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks)
        for m in module.modules()
    ]
    globals_ = [torch_module._global_forward_hooks, torch_module._global_forward_pre_hooks]
    return per_module + [len(g) for g in globals_]


def _in_threads(model: vt.LoadedModel, chunks: list[list[str]]) -> list[tuple[list, list]]:
    """Trace each chunk in its own thread, all released at once; each returns its traces and
    the hook names still active in that thread afterwards."""
    start = threading.Barrier(len(chunks))

    def work(texts: list[str]) -> tuple[list[vt.Trace], list[str]]:
        start.wait(timeout=60)
        return [vt.trace(model, t) for t in texts], active_hook_names()

    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        return list(pool.map(work, chunks))


def _check_parallel_equals_sequential(
    model: vt.LoadedModel, texts: list[str], n: int, same: Callable[[vt.Trace, vt.Trace], bool]
) -> None:
    hooks_before = _torch_hooks(model.module)
    sequential = [vt.trace(model, t) for t in texts]
    size = len(texts) // n
    results = _in_threads(model, [texts[i * size : (i + 1) * size] for i in range(n)])
    parallel = [tr for traces, _ in results for tr in traces]
    assert len(parallel) == len(sequential) == len(texts)
    mismatched = [t for t, a, b in zip(texts, sequential, parallel, strict=True) if not same(a, b)]
    assert mismatched == [], f"{len(mismatched)} traces differ from the sequential ones"
    assert [names for _, names in results] == [[]] * n  # nothing left active in any worker
    assert active_hook_names() == []
    assert _torch_hooks(model.module) == hooks_before


@pytest.fixture(scope="module")
def sov() -> vt.LoadedModel:
    return vt.load_model("paper-sov")


def test_sixteen_threads_of_fifty_sentences_equal_the_sequential_results(
    sov: vt.LoadedModel, same_trace
):
    model = sov
    texts = [src for src, _ in pairs(TASKS["sov"], N_THREADS * PER_THREAD, 61, "train")]
    assert len(set(texts)) == len(texts) == 800
    _check_parallel_equals_sequential(model, texts, N_THREADS, same_trace)
    # the paper model captures through HookPoints only: no torch hook at all, before or after
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.module.modules())


@pytest.mark.needs("bergamot")
def test_the_bergamot_translator_shared_by_four_threads_equals_the_sequential_results(same_trace):
    model = vt.load_model("bergamot-en-pt")
    # each thread gets 4 sentences
    _check_parallel_equals_sequential(model, ENGLISH * 2, 4, same_trace)


def _rss_bytes() -> int:
    """Resident set size of this process now (field 2 of /proc/self/statm, in pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_thousand_traces_after_a_warm_up_grow_memory_by_less_than_five_percent(
    sov: vt.LoadedModel,
):
    model = sov
    texts = [src for src, _ in pairs(TASKS["sov"], 1150, 62, "train")]
    with ThreadPoolExecutor(max_workers=4) as pool:  # the same threads warm up and measure

        def run(batch: list[str]) -> None:
            for _ in pool.map(lambda t: vt.trace(model, t), batch):
                pass  # each trace is dropped at once, as a session's rerun drops the last one

        run(texts[:150])
        gc.collect()
        before = _rss_bytes()
        run(texts[150:])
        gc.collect()
        after = _rss_bytes()
    growth = (after - before) / before
    print(f"RSS {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB ({growth:+.2%}) / 1000 traces")
    assert growth < 0.05
    assert active_hook_names() == []
