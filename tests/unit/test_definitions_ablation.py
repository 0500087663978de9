"""Head ablation and patching against their definitions written another way: the tiny paper
model's forward pass written out in plain torch (``testing.paper_hand``), with one head's output
z (softmax(QK^T/sqrt(d_k))V, before W^O) replaced by hand (zeros; its mean over the clean run's
query positions; another run's z), compared with the library's hooks (``token_effects``,
``head_importance``, ``patch_heads``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis.ablation import Replacements, ablation_hooks
from viz_transformer.analysis.effects import token_effects
from viz_transformer.testing import paper_hand as hand
from viz_transformer.testing.paper import tiny_paper_model

TEXT, OTHER = "alpha beta gamma delta", "alpha beta theta delta"
Edit = Callable[[torch.Tensor], torch.Tensor]  # z (1, h, T, d_k) -> z


@pytest.fixture(scope="module")
def model() -> vt.LoadedModel:
    return tiny_paper_model(seed=0)


@torch.no_grad()
def hand_run(
    model, text: str, out_ids: list[int], edits: dict[tuple[str, int], Edit] | None = None
) -> tuple[torch.Tensor, dict[tuple[str, int], torch.Tensor]]:
    """log p of ``out_ids`` and the end symbol, teacher-forced, with ``edits[(kind, layer)]``
    applied to that sub-layer's z; and every sub-layer's z before its edit."""
    edits, zs = edits or {}, {}
    dev = model.device
    src_ids, _ = model.source_ids(text)

    def sub(kind, i, attn, x_q, x_kv, mask):
        z = zs[(kind, i)] = hand.heads_z(attn, x_q, x_kv, mask)  # (1, h, Tq, d_k)
        edit = edits.get((kind, i))
        return hand.merged(attn, z if edit is None else edit(z.clone()))

    logp = hand.forward(model, src_ids, [model.vocab.bos_id, *out_ids], sub)  # (T, vocab)
    wanted = torch.tensor([*out_ids, model.vocab.eos_id], device=dev)
    return logp.gather(-1, wanted[:, None])[:, 0].double().cpu().numpy(), zs


def zero(head: int) -> Edit:
    def edit(z):
        z[:, head] = 0.0
        return z

    return edit


def put(head: int, value: torch.Tensor) -> Edit:
    """Head ``head``'s z replaced by ``value``: ``(d_k,)`` at every position, or ``(T, d_k)``."""

    def edit(z):
        z[:, head] = value
        return z

    return edit


def combine(*edits: Edit) -> Edit:
    def edit(z):
        for e in edits:
            z = e(z)
        return z

    return edit


def test_the_hand_forward_is_the_models(model):
    out_ids = model.reference_ids(TEXT)
    got, _ = hand_run(model, TEXT, out_ids)
    np.testing.assert_allclose(
        got, model.forced_logprobs(TEXT, out_ids)[0].double().cpu().numpy(), atol=1e-5
    )


HEADS = [("encoder", 0, 1), ("decoder", 1, 0), ("cross", 1, 1)]


@pytest.mark.parametrize("head", HEADS)
def test_zeroing_one_head_is_zeroing_its_z(model, head):
    kind, layer, h = head
    out_ids = model.reference_ids(TEXT)
    effect = token_effects(model, TEXT, [head], "zero")
    want, _ = hand_run(model, TEXT, out_ids, {(kind, layer): zero(h)})
    clean, _ = hand_run(model, TEXT, out_ids)
    np.testing.assert_allclose(effect.ablated, want, atol=1e-5)
    np.testing.assert_allclose(effect.normal, clean, atol=1e-5)
    assert np.abs(effect.ablated - effect.normal).max() > 1e-4  # the head mattered


@pytest.mark.parametrize("head", HEADS)
def test_mean_ablation_puts_the_heads_mean_over_positions(model, head):
    kind, layer, h = head
    out_ids = model.reference_ids(TEXT)
    _, zs = hand_run(model, TEXT, out_ids)
    mean = zs[(kind, layer)][0, h].mean(0)  # (d_k,): over the clean run's query positions
    want, _ = hand_run(model, TEXT, out_ids, {(kind, layer): put(h, mean)})
    effect = token_effects(model, TEXT, [head], "mean")
    np.testing.assert_allclose(effect.ablated, want, atol=1e-5)
    # a mean over the heads, or the first position's z, is another ablation
    for other in (zs[(kind, layer)][0].mean(0), zs[(kind, layer)][0, h, 0]):
        wrong, _ = hand_run(model, TEXT, out_ids, {(kind, layer): put(h, other)})
        assert np.abs(wrong - want).max() > 1e-4


def test_several_heads_of_several_kinds_at_once(model):
    out_ids = model.reference_ids(TEXT)
    heads = [("cross", 1, 1), ("encoder", 1, 0), ("cross", 1, 0), ("decoder", 0, 1)]
    _, zs = hand_run(model, TEXT, out_ids)
    edits = {
        ("cross", 1): combine(put(1, zs[("cross", 1)][0, 1].mean(0)),
                              put(0, zs[("cross", 1)][0, 0].mean(0))),
        ("encoder", 1): put(0, zs[("encoder", 1)][0, 0].mean(0)),
        ("decoder", 0): put(1, zs[("decoder", 0)][0, 1].mean(0)),
    }  # fmt: skip
    want, _ = hand_run(model, TEXT, out_ids, edits)
    np.testing.assert_allclose(token_effects(model, TEXT, heads, "mean").ablated, want, atol=1e-5)
    edits = {("cross", 1): combine(zero(1), zero(0)), ("encoder", 1): zero(0),
             ("decoder", 0): zero(1)}  # fmt: skip
    want, _ = hand_run(model, TEXT, out_ids, edits)
    np.testing.assert_allclose(token_effects(model, TEXT, heads, "zero").ablated, want, atol=1e-5)


@pytest.mark.parametrize(
    ("kind", "ablation"),
    [("encoder", "mean"), ("decoder", "zero"), ("cross", "zero"), ("cross", "mean")],
)
def test_importance_is_each_heads_own_drop(model, kind, ablation):
    out_ids = model.reference_ids(TEXT)
    clean, zs = hand_run(model, TEXT, out_ids)
    got = vt.head_importance(model, TEXT, kind, ablation=ablation)
    layers, n_heads = model.attention_shape(kind)
    want = np.zeros((layers, n_heads))
    for layer in range(layers):
        for h in range(n_heads):
            edit = zero(h) if ablation == "zero" else put(h, zs[(kind, layer)][0, h].mean(0))
            ablated, _ = hand_run(model, TEXT, out_ids, {(kind, layer): edit})
            want[layer, h] = float(clean.sum() - ablated.sum())
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert np.ptp(want) > 1e-3  # the heads differ, so a mix-up of heads would show


@pytest.mark.parametrize("kind", ["cross"])
def test_patching_is_the_logit_difference_each_clean_head_restores(model, kind):
    y_clean, y_corr = model.reference_ids(TEXT), model.reference_ids(OTHER)
    assert y_clean != y_corr
    layers, n_heads = model.attention_shape(kind)
    want = np.zeros((layers, n_heads))
    ld = {}
    for run in ("clean", "corr"):
        text = TEXT if run == "clean" else OTHER
        ld[run] = float(
            hand_run(model, text, y_clean)[0].sum() - hand_run(model, text, y_corr)[0].sum()
        )
    for layer in range(layers):
        for h in range(n_heads):
            total = 0.0
            for sign, y in ((1.0, y_clean), (-1.0, y_corr)):
                _, zs = hand_run(model, TEXT, y)  # the clean run's z, on the same output
                patched, _ = hand_run(
                    model, OTHER, y, {(kind, layer): put(h, zs[(kind, layer)][0, h])}
                )
                total += sign * float(patched.sum())
            want[layer, h] = (total - ld["corr"]) / (ld["clean"] - ld["corr"])
    np.testing.assert_allclose(vt.patch_heads(model, TEXT, OTHER, kind), want, atol=1e-4)
    assert np.ptp(want) > 1e-3


def test_replacements_name_the_first_hook_point_that_never_ran():
    fns = Replacements("m")
    fns["b.hook_z"] = fns["a.hook_z"] = fns["c.hook_z"] = lambda z, _name: z
    fns.fired.update({"a.hook_z", "x.hook_z"})  # x: a point that ran but was not replaced
    with pytest.raises(ValueError, match=r"m never ran b\.hook_z: its attention code"):
        fns.check()
    fns.fired.update({"b.hook_z", "c.hook_z"})
    fns.check()


def test_mean_ablation_with_a_target_takes_the_means_over_the_target(model):
    target = "theta iota kappa"
    out_ids = model.reference_ids(TEXT, target)
    assert out_ids != model.reference_ids(TEXT)
    kind, layer, h = "cross", 0, 1  # a decoder-side head: its z depends on the output
    _, zs = hand_run(model, TEXT, out_ids)
    want, _ = hand_run(
        model, TEXT, out_ids, {(kind, layer): put(h, zs[(kind, layer)][0, h].mean(0))}
    )
    fns = ablation_hooks(model, TEXT, [(kind, layer, h)], "mean", target)
    with model.hooked(fns):
        got = model.forced_logprobs(TEXT, out_ids)[0].double().cpu().numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("head", [("cross", True, 0), ("cross", 0, False), ("cross", 1.0, 0)])
def test_a_head_is_counted_by_integers_not_truth_values(model, head):
    with pytest.raises(ValueError, match="does not exist in tiny: choose 0 to 1"):
        vt.trace(model, TEXT, ablate=[head])
