"""The paper model's key/value cache and fused attention against the uncached, explicit path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis.decoding import _search
from viz_transformer.models.paper import PaperModel
from viz_transformer.models.prefix_states import PrefixStates
from viz_transformer.networks.hooks import collect, hooks
from viz_transformer.networks.paper_decode import greedy_decode, pad_batch, source_mask
from viz_transformer.testing.paper import tiny_paper_model

SRC = [4, 5, 6, 7, 2]
TGT = [1, 8, 9, 10, 3, 5, 11]  # <s> then six outputs


@pytest.fixture(scope="module")
def reverse() -> PaperModel:
    return vt.load_model("paper-reverse")


def _uncached(model: PaperModel) -> PaperModel:
    """The same model whose step sessions decode every prefix whole."""
    other = PaperModel(model.spec, model.device, model.module, model.vocab, model.meta)
    other.decoder_session = lambda text: PaperModel.decoder_session(other, text, use_cache=False)
    return other


def test_extend_one_token_at_a_time_equals_decoding_the_whole_prefix(tiny):
    module, dev = tiny.module, tiny.device
    with torch.no_grad():
        memory = module.encode(torch.tensor([SRC], device=dev))
        full = module.decode(memory, None, torch.tensor([TGT], device=dev))[0]  # (T, vocab)
        cache = module.start(memory)
        for t, token in enumerate(TGT):
            assert cache.length == t
            logits, cache = module.extend(cache, None, torch.tensor([[token]], device=dev))
            torch.testing.assert_close(logits[0, 0], full[t], atol=1e-5, rtol=0)
        # several new positions at once after a cache: the causal mask is offset
        head, _ = module.extend(module.start(memory), None, torch.tensor([TGT[:3]], device=dev))
        cache3 = module.extend(module.start(memory), None, torch.tensor([TGT[:3]], device=dev))[1]
        rest, _ = module.extend(cache3, None, torch.tensor([TGT[3:]], device=dev))
    torch.testing.assert_close(torch.cat([head, rest], 1)[0], full, atol=1e-5, rtol=0)


def test_cached_hook_points_hold_the_new_query_rows_over_all_keys(tiny):
    module, attn = tiny.module, "decoder.layers.1.self_attn"
    cross = "decoder.layers.0.cross_attn.hook_pattern"
    _, whole = tiny.run_with_cache(SRC, TGT, [f"{attn}.hook_{x}" for x in "qk"] + [
        f"{attn}.hook_scores", f"{attn}.hook_pattern", cross])  # fmt: skip
    expected = {  # position 4 of the whole pass: its query row over keys 0..4
        f"{attn}.hook_q": whole[f"{attn}.hook_q"][:, 4:5],
        f"{attn}.hook_k": whole[f"{attn}.hook_k"][:, :5],
        f"{attn}.hook_scores": whole[f"{attn}.hook_scores"][:, 4:5, :5],
        f"{attn}.hook_pattern": whole[f"{attn}.hook_pattern"][:, 4:5, :5],
        cross: whole[cross][:, 4:5],
    }
    dev = tiny.device
    with torch.no_grad():
        memory = module.encode(torch.tensor([SRC], device=dev))
        cache = module.extend(module.start(memory), None, torch.tensor([TGT[:4]], device=dev))[1]
        with collect(module, list(expected)) as step:
            module.extend(cache, None, torch.tensor([[TGT[4]]], device=dev))
    h, d_k = module.cfg.n_heads, module.cfg.d_k
    assert step[f"{attn}.hook_q"].shape == (h, 1, d_k)
    assert step[f"{attn}.hook_k"].shape == (h, 5, d_k)
    assert step[f"{attn}.hook_pattern"].shape == (h, 1, 5)
    for name, rows in expected.items():
        np.testing.assert_allclose(step[name], rows, atol=1e-5)


@pytest.mark.parametrize("width", [1, 3])
def test_cached_session_scores_equal_the_uncached_ones_for_every_prefix(
    reverse, width, monkeypatch
):
    text = reverse.spec.example
    widths = []
    extend = reverse.module.extend

    def spy(cache, src_mask, tgt_new):
        widths.append(tgt_new.shape[1])
        return extend(cache, src_mask, tgt_new)

    monkeypatch.setattr(reverse.module, "extend", spy)
    best, history, cached = _search(reverse.decoder_session(text), width, 30)
    monkeypatch.undo()
    best_u, history_u, whole = _search(_uncached(reverse).decoder_session(text), width, 30)
    assert best == best_u and cached.keys() == whole.keys() and len(cached) >= 7
    assert widths == [1] * len(cached)  # each prefix ran one new token against its parent
    for beams, beams_u in zip(history, history_u, strict=True):
        assert [ids for ids, _ in beams] == [ids for ids, _ in beams_u]
        np.testing.assert_allclose([p for _, p in beams], [p for _, p in beams_u], atol=1e-5)
    for prefix, scores in cached.items():
        ref = whole[prefix]
        np.testing.assert_allclose(scores.logprobs, ref.logprobs, atol=1e-5)
        np.testing.assert_allclose(scores.self_row, ref.self_row, atol=1e-5)
        np.testing.assert_allclose(scores.cross_row, ref.cross_row, atol=1e-5)


def test_a_prefix_without_a_kept_parent_is_decoded_whole(tiny):
    session = tiny.decoder_session("alpha beta gamma")
    reference = _uncached(tiny).decoder_session("alpha beta gamma")
    for prefix in [(5, 6, 7), (), (5,), (5, 9)]:  # out of order: no parent for the first one
        got, ref = session.score(prefix), reference.score(prefix)
        np.testing.assert_allclose(got.logprobs, ref.logprobs, atol=1e-5)
        np.testing.assert_allclose(got.self_row, ref.self_row, atol=1e-5)
        assert got.self_row.shape[-1] == len(prefix) + 1


@pytest.mark.parametrize("which", ["tiny", "paper-reverse"])
def test_greedy_decode_gives_the_same_ids_with_and_without_the_cache(which, reverse):
    model = tiny_paper_model(seed=3, max_len=24) if which == "tiny" else reverse
    vocab = model.vocab
    texts = [model.spec.example, vocab.tokens[4], " ".join(model.spec.example.split()[::-1])]
    src = pad_batch([vocab.encode(t) for t in texts], vocab.pad_id, model.device)
    mask = source_mask(src, vocab.pad_id)
    with torch.no_grad():
        memory = model.module.encode(src, mask)
    ids = {"bos_id": vocab.bos_id, "eos_id": vocab.eos_id, "src_mask": mask}
    cached = greedy_decode(model.module, memory, 20, **ids)
    assert cached == greedy_decode(model.module, memory, 20, **ids, use_cache=False)
    assert len(cached) == 3 and all(0 < len(ids) <= 20 for ids in cached)


@pytest.mark.parametrize("scale", [True, False])
def test_fused_attention_without_hooks_equals_the_explicit_softmax(scale, monkeypatch):
    model = tiny_paper_model(seed=1, scale_scores=scale)
    module = model.module
    calls = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(
        torch.nn.functional,
        "scaled_dot_product_attention",
        lambda *a, **k: calls.append(1) or sdpa(*a, **k),
    )
    src = pad_batch([SRC, SRC[2:]], 0, model.device)  # padded: the source mask matters
    tgt = torch.tensor([TGT, TGT], device=model.device)
    mask = source_mask(src, 0)
    with torch.no_grad():
        fused = module(src, tgt, mask)
        n_fused = len(calls)
        with hooks(module, {"decoder.layers.0.hook_resid_pre": lambda x, name: None}):
            explicit = module(src, tgt, mask)
    assert n_fused == 2 + 2 * 2 and len(calls) == n_fused  # no fused call inside the hook block
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=0)
    assert not torch.allclose(fused[0], fused[1], atol=1e-3)  # the padded row differs


def test_prefix_states_keep_only_the_last_two_lengths():
    states: PrefixStates[str] = PrefixStates()
    states.put((), "root")
    assert states.parent((7,)) == "root" and states.parent(()) is None
    for a in (1, 2, 3):
        states.put((a,), f"{a}")
    assert len(states) == 4 and states.parent((2, 9)) == "2"
    states.put((2, 9), "29")  # length 2 drops length 0
    assert states.parent((5,)) is None and len(states) == 4
    states.put((2, 9, 4), "294")
    assert states.parent((2, 9, 4, 1)) == "294" and states.parent((1, 1)) is None
    assert len(states) == 2


def test_extending_past_the_position_table_is_refused(tiny):
    module, dev, n = tiny.module, tiny.device, tiny.module.cfg.max_len
    with torch.no_grad():
        memory = module.encode(torch.tensor([SRC], device=dev))
        cache = module.extend(
            module.start(memory), None, torch.ones(1, n - 1, dtype=int, device=dev)
        )[1]
        module.extend(cache, None, torch.ones(1, 1, dtype=int, device=dev))  # the last position
        with pytest.raises(ValueError, match=f"{n + 1} tokens exceed this model's {n} positions"):
            module.extend(cache, None, torch.ones(1, 2, dtype=int, device=dev))
