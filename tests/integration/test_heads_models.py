"""What heads do, on shipped and tiny Hugging Face models: the measured redundancy of
``paper-reverse``'s cross-attention heads, value-weighted maps against transformers' own
outputs, and ablation on Bergamot."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis.ablation import replace_heads
from viz_transformer.networks.hooks import collect
from viz_transformer.testing.hf import TEXT
from viz_transformer.training.tasks.catalog import TASKS, pairs


@pytest.fixture(scope="module")
def reverse():
    model = vt.load_model("paper-reverse")
    data = pairs(TASKS["reverse"], 40, seed=20261121, split="held_out")

    def correct(heads: list[tuple[str, int, int]]) -> int:
        return sum(vt.trace(model, src, ablate=heads).output_text == tgt for src, tgt in data)

    return correct


@pytest.mark.slow
def test_paper_reverse_layer_1_cross_heads_are_redundant(reverse):
    """Measured (bench/bench_heads.py prints the same table): one or two of decoder layer 1's
    four cross heads ablated leave reversal intact on 40 held-out inputs, three nearly so, all
    four break it; layer 0's four together cost most inputs."""
    assert reverse([]) == 40
    for r in (1, 2):
        for heads in itertools.combinations(range(4), r):
            assert reverse([("cross", 1, h) for h in heads]) == 40, heads
    threes = [reverse([("cross", 1, h) for h in hs]) for hs in itertools.combinations(range(4), 3)]
    assert threes == [39, 39, 40, 40]
    assert reverse([("cross", 1, h) for h in range(4)]) == 0
    assert reverse([("cross", 0, h) for h in range(4)]) == 15


def test_single_head_importance_does_not_pretend_one_head_is_decisive():
    model = vt.load_model("paper-reverse")
    imp = vt.head_importance(model, "happy king red ship", "cross")
    assert imp.shape == (2, 4) and np.abs(imp).max() < 0.1  # each alone costs almost nothing
    restored = vt.patch_set(
        model, "happy king red ship", "happy king blue ship", "cross", [(1, h) for h in range(4)]
    )
    assert 0.99 < restored < 1.0  # layer 1's cross heads carry the source together (0.997)


@pytest.mark.parametrize("family", ["llama", "bart"])
def test_value_weighted_matches_transformers_outputs(load_tiny, family):
    model = load_tiny(family)
    kind = "cross" if model.spec.encoder_decoder else "decoder"
    layers, heads = model.attention_shape(kind)
    got = vt.value_weighted(model, TEXT, kind)
    # an independent eager copy: transformers' own weights and output_attentions
    ref = type(model.module).from_pretrained(model.spec.path, attn_implementation="eager").eval()
    modules = [ref.get_submodule(n.removesuffix(".hook_pattern")) for n in model.names[kind]]
    values: list[torch.Tensor] = []
    handles = [
        m.v_proj.register_forward_hook(lambda _m, _i, out: values.append(out)) for m in modules
    ]
    ids = torch.tensor([model.encode_text(TEXT)], device=ref.device)
    try:
        with torch.no_grad():
            if kind == "cross":
                out_ids = model.reference_ids(TEXT)
                start = model.module.config.decoder_start_token_id
                dec = torch.tensor([[start, *out_ids]], device=ref.device)
                out = ref(input_ids=ids, decoder_input_ids=dec, output_attentions=True)
                patterns = out.cross_attentions
            else:
                out = ref(input_ids=ids, output_attentions=True)
                patterns = out.attentions
    finally:
        for h in handles:
            h.remove()
    if kind == "cross":
        values = values[-layers:]  # BART's cross keys/values are projected per layer, in order
    for layer, (mod, pattern, v) in enumerate(zip(modules, patterns, values, strict=True)):
        d_k = mod.head_dim
        v = v[0].view(v.shape[1], -1, d_k).transpose(0, 1)  # (h_kv, k, d_k)
        v = v.repeat_interleave(heads // v.shape[0], dim=0)  # grouped-query heads share values
        proj = getattr(mod, "o_proj", None) or mod.out_proj
        w_o = proj.weight.T.reshape(heads, d_k, -1)  # (h, d_k, d)
        norms = torch.einsum("hkd,hde->hke", v, w_o).norm(dim=-1)  # (h, k)
        want = (pattern[0] * norms[:, None, :]).detach().numpy()
        np.testing.assert_allclose(got[layer], want, atol=1e-5)


@pytest.mark.needs("bergamot")
def test_bergamot_ablation_changes_the_translation_and_importance_is_batched():
    model = vt.load_model("bergamot-en-pt")
    text = "I am a student."
    plain = vt.trace(model, text)
    layer_1 = [("cross", 1, h) for h in range(8)] + [("cross", 0, h) for h in range(8)]
    assert vt.trace(model, text, ablate=layer_1).output_text != plain.output_text
    imp = vt.head_importance(model, text, "encoder")
    assert imp.shape == (6, 8) and np.isfinite(imp).all()
    with pytest.raises(ValueError, match="has no 'decoder' attention heads"):
        vt.head_importance(model, text, "decoder")


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_logit_lens_reads_transformers_hidden_states(load_tiny, family):
    """Each decoder layer's stream is transformers' ``output_hidden_states`` (the last one after
    the final norm), so the last layer's lens is the model's own logits."""
    model = load_tiny(family)
    out_ids = model.reference_ids(TEXT)
    assert 1 <= len(out_ids) <= 5  # the greedy continuation, up to five tokens
    ids = torch.tensor([[*model.encode_text(TEXT), *out_ids]], device=model.device)
    with torch.no_grad():
        ref = model.module(input_ids=ids, output_hidden_states=True)
    names = model.lens_points()
    assert len(names) == model.attention_shape("decoder")[0] == len(ref.hidden_states) - 1
    with collect(model.module, names) as cache:
        model.forced_logprobs(TEXT, out_ids)
    for layer, name in enumerate(names[:-1]):
        np.testing.assert_allclose(
            cache[name], ref.hidden_states[layer + 1][0].cpu().numpy(), atol=1e-5
        )
    last = model.unembed(torch.from_numpy(cache[names[-1]]).to(model.device))
    torch.testing.assert_close(last, ref.logits[0], atol=1e-4, rtol=1e-4)
    lens = vt.logit_lens(model, TEXT)
    assert lens.probs.shape == (len(names), ids.shape[1])
    # the prompt labelled as the start of a text, the continuation read after the prompt, and
    # each prediction read after the input at its position (glued to a word: "##")
    prompt_ids = model.encode_text(TEXT)
    prompt = model.token_labels(prompt_ids)
    assert lens.inputs == (*prompt, *model.output_tokens([prompt_ids[-1], *out_ids])[1:])
    inputs, predicted = ids[0].tolist(), ref.logits[0].argmax(-1).tolist()
    after = tuple(model.output_tokens([i, p])[1] for i, p in zip(inputs, predicted, strict=True))
    assert lens.output == after


def test_decoder_only_importance_scores_the_greedy_continuation(load_tiny):
    model = load_tiny("llama")
    out_ids = model.reference_ids(TEXT)
    imp = vt.head_importance(model, TEXT, "decoder")
    assert imp.shape == (2, 4)
    clean = float(model.forced_logprobs(TEXT, out_ids).sum())
    from viz_transformer.analysis.ablation import ablation_hooks

    with vt.hooks(model.module, ablation_hooks(model, TEXT, [("decoder", 1, 2)], "zero", None)):
        ablated = float(model.forced_logprobs(TEXT, out_ids).sum())
    assert imp[1, 2] == pytest.approx(clean - ablated, abs=1e-4)
    assert model.forced_logprobs(TEXT, out_ids).shape == (1, len(out_ids))


@pytest.mark.slow
def test_smollm2_has_induction_heads(smollm2_model):
    """Measured with bench/bench_heads.py: on a 20-word sentence shuffled and repeated, five of
    SmolLM2-135M's 270 heads (L17 H3-5, L18 H6, L20 H6) score above 0.3 (issue 15: several);
    none in layer 0, where no earlier layer can supply the previous token."""
    sentence = (
        "The agreement on the European Economic Area was signed in August 1992 by the twelve "
        "member states and seven other countries."
    )
    induction = vt.head_roles(smollm2_model, "decoder", sentence)["induction"]
    assert induction.shape == (30, 9)
    strong = {(int(a), int(h)) for a, h in np.argwhere(induction > 0.3)}
    assert len(strong) >= 3, strong
    assert {(17, 3), (17, 4), (17, 5)} <= strong
    assert not any(layer == 0 for layer, _ in strong)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_layer_runs_rerun_from_the_lowest_ablated_layer_as_whole_passes_do(
    load_tiny, family, monkeypatch
):
    """The fast path of head importance (each row rerun from its lowest ablated layer on the
    inputs the clean pass kept, ``LoadedModel.layer_runs``) equals whole ablated passes, on a
    grouped-query Llama (4 heads, 2 key/value heads) and on GPT-2."""
    model = load_tiny(family)
    out_ids = model.reference_ids(TEXT)
    runs = model.layer_runs(TEXT, out_ids, "decoder")
    assert runs is not None and runs.layers == 2
    torch.testing.assert_close(runs.clean, model.forced_logprobs(TEXT, out_ids), atol=1e-5, rtol=0)
    rows = [[(0, 1)], [(0, 0), (1, 1)], [(1, 0)]]  # row 1 also changes a head of layer 1
    with vt.hooks(model.module, fns := replace_heads(model, "decoder", rows)):
        fast = runs.run([0, 0, 1])
    fns.check()
    with vt.hooks(model.module, replace_heads(model, "decoder", rows)):
        whole = model.forced_logprobs(TEXT, out_ids, batch=3)
    torch.testing.assert_close(fast, whole, atol=1e-5, rtol=0)
    assert (fast - runs.clean).abs().amax(-1).min() > 1e-4  # every row's ablation shows
    with pytest.raises(ValueError, match="ascending layer order"):
        runs.run([1, 0])
    corrupted = "the cat ran to the trek"  # as many tokens, another continuation
    scores = {
        "zero": lambda: vt.head_importance(model, TEXT, "decoder"),
        "mean": lambda: vt.head_importance(model, TEXT, "decoder", ablation="mean"),
        "patch": lambda: vt.patch_heads(model, TEXT, corrupted, "decoder"),
    }
    for what, score in scores.items():
        got = score()
        with monkeypatch.context() as patch:
            patch.setattr(model, "layer_runs", lambda *_: None)  # the generic path
            want = score()
        assert np.abs(want).max() > 1e-3, what
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=0, err_msg=what)


def test_smollm2_logit_lens_shows_text_not_tokenizer_bytes(smollm2_model):
    """Issue 28: the lens showed "Ġ", "Ċ", "##The" and "âĢĻ". A piece after a newline or a quote
    starts a word; a curly quote shows as itself; no byte-level marker is left anywhere."""
    lens = vt.logit_lens(smollm2_model, "The cat said ’hi’ on the mat.\nThe dog")
    assert lens.inputs[:8] == ("The", "cat", "said", "’", "hi", "’", "on", "the")
    assert lens.inputs[9:13] == (".", "↵", "The", "dog")
    shown = {t for row in lens.tokens for t in row} | set(lens.inputs)
    raw = {t for t in shown if set(t) & set("ĠĊĉâĢĻ")}
    assert not raw, raw
    # every prediction read after its own input: "##" only where the input ends in a letter
    for row in lens.tokens:
        for before, token in zip(lens.inputs, row, strict=True):
            if token.startswith("##"):
                assert before[-1:].isalnum(), (before, token)
