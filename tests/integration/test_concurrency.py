"""One cached model, many threads: no captures mixing, no hooks left behind, also after errors."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

import viz_transformer as vt
from viz_transformer.networks.hooks import active_hook_names, hooks
from viz_transformer.training.tasks.catalog import TASKS


def test_eight_threads_on_one_model_equal_the_sequential_results(same_trace):
    model = vt.load_model("paper-reverse")
    rng = random.Random(3)
    texts = [TASKS["reverse"].sample(rng)[0] for _ in range(32)]
    sequential = [vt.trace(model, t) for t in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda t: vt.trace(model, t), texts))
    assert all(same_trace(a, b) for a, b in zip(sequential, parallel, strict=True))
    assert active_hook_names() == []
    assert not any(m._forward_hooks for m in model.module.modules())


def test_an_exception_inside_one_capture_leaves_no_hook_and_spares_the_others(same_trace):
    model = vt.load_model("paper-reverse")
    texts = ["sun moon star", "red ship blue sea", "cat dog", "king queen tree river"]
    expected = {t: vt.trace(model, t) for t in texts}

    def boom(x, name):
        raise RuntimeError("hook failed")

    def run(job: tuple[bool, str]) -> bool:
        fail, text = job
        if fail:
            name = "encoder.layers.0.self_attn.hook_pattern"
            with pytest.raises(RuntimeError, match="hook"), hooks(model.module, {name: boom}):
                vt.trace(model, text)
            return active_hook_names() == []
        return same_trace(vt.trace(model, text), expected[text]) and active_hook_names() == []

    jobs = [(i % 3 == 0, t) for i, t in enumerate(texts * 6)]  # failing and working interleaved
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(run, jobs))
    assert active_hook_names() == []
