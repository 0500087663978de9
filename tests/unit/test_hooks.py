"""Hook points: names from module paths, per-thread activation, always removed."""

from __future__ import annotations

import threading

import pytest
import torch

from viz_transformer.networks.hooks import active_hook_names, hooks
from viz_transformer.testing.paper import tiny_paper_model

ATTN = ["hook_q", "hook_k", "hook_v", "hook_scores", "hook_pattern", "hook_z"]


def test_hook_names_are_pinned():
    module = tiny_paper_model(n_encoder_layers=1, n_decoder_layers=1).module
    expected = {"hook_src_embed", "hook_tgt_embed", "hook_src_pos", "hook_tgt_pos"}
    expected |= {f"encoder.layers.0.self_attn.{h}" for h in ATTN}
    expected |= {f"decoder.layers.0.{a}.{h}" for a in ("self_attn", "cross_attn") for h in ATTN}
    expected |= {f"encoder.layers.0.hook_resid_{r}" for r in ("pre", "mid", "post")}
    expected |= {f"decoder.layers.0.hook_resid_{r}" for r in ("pre", "mid", "cross", "post")}
    assert set(module.hook_points) == expected
    assert all(point.name == name for name, point in module.hook_points.items())


def test_hooks_removed_after_exception_and_no_torch_hooks_registered(tiny):
    with pytest.raises(RuntimeError, match="boom"), hooks(tiny.module, {"hook_src_pos": print}):
        assert active_hook_names() == ["hook_src_pos"]
        raise RuntimeError("boom")
    assert active_hook_names() == []
    for m in tiny.module.modules():
        assert not m._forward_hooks and not m._forward_pre_hooks


def test_unknown_hook_name_is_refused_with_examples(tiny):
    with (
        pytest.raises(ValueError, match="unknown hook points"),
        hooks(tiny.module, {"nope": print}),
    ):
        pass


def test_a_hook_can_replace_an_activation(tiny):
    name = "encoder.layers.0.self_attn.hook_pattern"
    uniform = lambda x, _: torch.full_like(x, 1.0 / x.shape[-1])  # noqa: E731
    with hooks(tiny.module, {name: uniform}):
        _, cache = tiny.run_with_cache([4, 5, 6, 2], [1, 7], [name])
    assert (abs(cache[name] - 0.25) < 1e-7).all()


def test_hooks_of_one_thread_are_invisible_in_another(tiny):
    seen: list[list[str]] = []
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait(5)
        seen.append(active_hook_names())
        release.set()

    t = threading.Thread(target=other)
    t.start()
    with hooks(tiny.module, {"hook_src_pos": lambda x, _: None}):
        inside.set()
        release.wait(5)
    t.join()
    assert seen == [[]]
