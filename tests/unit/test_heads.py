"""Head ablation, importance, patching, value-weighted attention, role scores and the logit lens
on the tiny random paper model, checked against hand-written computations."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis import lens as lens_module
from viz_transformer.analysis.roles import (
    alignment_score,
    diagonal_score,
    first_score,
    repeat_score,
    repeated_text,
)
from viz_transformer.figures import heads as head_figures
from viz_transformer.records.progress import Cancelled, StopToken
from viz_transformer.testing import paper_hand as hand
from viz_transformer.testing.paper import tiny_paper_model

TEXT, OTHER = "alpha beta gamma delta", "alpha beta theta delta"


def _without_heads(skip: tuple[str, int] | None) -> hand.Sublayer:
    """Eq. 1 by hand, but the sub-layer ``skip`` = (kind, layer) outputs what it does when its
    heads all output 0: W^O's bias alone."""

    def sublayer(kind, i, attn, x_q, x_kv, mask):
        if (kind, i) == skip:
            return attn.W_o.bias.expand(*x_q.shape[:-1], -1)
        return hand.attention(kind, i, attn, x_q, x_kv, mask)

    return sublayer


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
@pytest.mark.parametrize("layer", [0, 1])
def test_ablating_every_head_of_a_layer_leaves_only_the_output_bias(kind, layer):
    model = tiny_paper_model(device="cpu")
    src_ids, _ = model.source_ids(TEXT)
    out_ids = model.reference_ids(TEXT)
    heads = [(kind, layer, h) for h in range(model.attention_shape(kind)[1])]
    from viz_transformer.analysis.ablation import ablation_hooks

    with vt.hooks(model.module, ablation_hooks(model, TEXT, heads, "zero", None)):
        got = model.forced_logprobs(TEXT, out_ids)[0]
    with torch.no_grad():
        full = hand.forward(
            model, src_ids, [model.vocab.bos_id, *out_ids], _without_heads((kind, layer))
        )
        plain = hand.forward(model, src_ids, [model.vocab.bos_id, *out_ids])
    wanted = full.gather(
        -1, torch.tensor([*out_ids, model.vocab.eos_id], device=model.device)[:, None]
    )[:, 0]
    torch.testing.assert_close(got, wanted, atol=1e-5, rtol=1e-5)
    unablated = plain.gather(
        -1, torch.tensor([*out_ids, model.vocab.eos_id], device=model.device)[:, None]
    )[:, 0]
    torch.testing.assert_close(
        model.forced_logprobs(TEXT, out_ids)[0], unablated, atol=1e-5, rtol=0
    )
    assert not torch.allclose(got, unablated, atol=1e-4)  # the ablation did change something


def test_empty_ablation_is_a_plain_trace_bit_for_bit(tiny, same_trace):
    assert same_trace(vt.trace(tiny, TEXT, ablate=[]), vt.trace(tiny, TEXT))
    assert same_trace(vt.trace(tiny, TEXT, ablate=None, ablation="mean"), vt.trace(tiny, TEXT))


def test_ablated_trace_runs_the_ablation_through_decoding(tiny):
    heads = [(k, i, h) for k in ("encoder", "cross") for i in range(2) for h in range(2)]
    plain, ablated = vt.trace(tiny, TEXT), vt.trace(tiny, TEXT, ablate=heads)
    assert ablated.messages[-1] == (
        "Heads ablated (zero): encoder self L0 H0, encoder self L0 H1, encoder self L1 H0, "
        "encoder self L1 H1, cross attention L0 H0, cross attention L0 H1, cross attention "
        "L1 H0, cross attention L1 H1."
    )
    # with every encoder and cross head gone the decoder cannot see the source at all
    assert vt.trace(tiny, OTHER, ablate=heads).output_text == ablated.output_text
    assert not np.array_equal(plain.cross, ablated.cross)


@pytest.mark.parametrize(
    ("ablate", "ablation", "message"),
    [
        (
            [("cross", 2, 0)],
            "zero",
            "layer 2 of cross attention does not exist in tiny: choose 0 to 1",
        ),
        (
            [("cross", 0, 5)],
            "zero",
            "head 5 of cross attention does not exist in tiny: choose 0 to 1",
        ),
        ([("self", 0, 0)], "zero", "has no 'self' attention heads; use one of 'encoder'"),
        ([(0, 0)], "zero", "is not a head: write (kind, layer, head)"),
        ([("cross", 0, 0)], "half", "ablation='half' is not a mode: use 'zero' or 'mean'"),
    ],
)
def test_bad_ablations_say_what_to_change(tiny, ablate, ablation, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        vt.trace(tiny, TEXT, ablate=ablate, ablation=ablation)


def test_importance_is_the_drop_of_each_single_ablation(tiny):
    imp = vt.head_importance(tiny, TEXT, "cross")
    assert imp.shape == (2, 2)
    out_ids = tiny.reference_ids(TEXT)
    clean = float(tiny.forced_logprobs(TEXT, out_ids).sum())
    for layer, head in [(0, 1), (1, 0)]:
        with torch.no_grad():
            tr_fns = _ablate(tiny, [("cross", layer, head)])
            with vt.hooks(tiny.module, tr_fns):
                drop = clean - float(tiny.forced_logprobs(TEXT, out_ids).sum())
        assert imp[layer, head] == pytest.approx(drop, abs=1e-4)
    means = vt.head_importance(tiny, TEXT, "encoder", ablation="mean", progress=lambda f: None)
    assert means.shape == (2, 2) and np.isfinite(means).all()


def _ablate(model, heads):
    from viz_transformer.analysis.ablation import ablation_hooks

    return ablation_hooks(model, TEXT, heads, "zero", None)


def test_patching_every_cross_head_restores_exactly_one(tiny):
    if tiny.reference_ids(TEXT) == tiny.reference_ids(OTHER):
        pytest.fail("the tiny model must translate the two sentences differently")
    every = [(layer, head) for layer in range(2) for head in range(2)]
    assert vt.patch_set(tiny, TEXT, OTHER, "cross", every) == pytest.approx(1.0, abs=1e-5)
    assert vt.patch_set(tiny, TEXT, OTHER, "cross", []) == pytest.approx(0.0, abs=1e-5)
    assert vt.patch_heads(tiny, TEXT, OTHER, "cross").shape == (2, 2)


def test_patching_refuses_unequal_lengths_and_equal_outputs(tiny):
    with pytest.raises(ValueError, match="same token length: the clean one has 5 tokens"):
        vt.patch_heads(tiny, TEXT, "alpha beta", "cross")
    with pytest.raises(ValueError, match="both sentences give the same output"):
        vt.patch_heads(tiny, TEXT, TEXT, "cross")


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_value_weighted_matches_a_direct_computation(tiny, kind):
    got = vt.value_weighted(tiny, TEXT, kind)
    tr = vt.trace(tiny, TEXT)
    assert got.shape == tr.get(kind).shape
    run = tiny.qkv_run(TEXT, kind)
    for layer in range(2):
        attn = (tiny.module.encoder if kind == "encoder" else tiny.module.decoder).layers
        sub = attn[layer].cross_attn if kind == "cross" else attn[layer].self_attn
        v = run.captured["v"][layer]  # (h, k, d_k)
        w_o = sub.W_o.weight.detach().cpu().numpy()  # (d, h * d_k); the model may run on a GPU
        for h in range(2):
            f = v[h] @ w_o[:, h * 8 : (h + 1) * 8].T  # (k, d)
            want = tr.get(kind)[layer, h] * np.linalg.norm(f, axis=-1)[None, :]
            np.testing.assert_allclose(got[layer, h], want, atol=1e-5)


def test_role_formulas_on_synthetic_patterns():
    n = 6
    prev = np.zeros((1, 1, n, n))
    prev[0, 0, 0, 0] = 1
    prev[0, 0, np.arange(1, n), np.arange(n - 1)] = 1
    assert diagonal_score(prev, 1, True)[0, 0] == 1.0
    assert diagonal_score(prev, 0, True)[0, 0] == 0.0
    sink = np.zeros((1, 1, n, n))
    sink[..., 0] = 1
    assert first_score(sink, True)[0, 0] == 1.0
    # "a b c a b c": induction looks from the second a (3) to the first b (1), and so on
    tokens = ("a", "b", "c", "a", "b", "c")
    ind = np.zeros((n, n))
    ind[np.arange(n), np.arange(n)] = 1
    ind[3:] = 0
    ind[3, 1], ind[4, 2], ind[5, 3] = 1, 1, 1
    assert repeat_score(ind, tokens, 1) == 1.0
    assert repeat_score(ind, tokens, 0) == 0.0
    dup = np.zeros((n, n))
    dup[3, 0], dup[4, 1], dup[5, 2] = 1, 1, 1
    assert repeat_score(dup, tokens, 0) == 1.0
    # reversal of 3 words: rows predict w3 w2 w1 </s> from source w1 w2 w3 </s>
    rev = np.zeros((4, 4))
    rev[0, 2], rev[1, 1], rev[2, 0], rev[3, 3] = 1, 1, 1, 1
    assert alignment_score(rev) == 1.0
    assert alignment_score(np.eye(4)) == 1.0
    assert alignment_score(np.full((4, 4), 0.25)) == 0.25
    assert sorted(repeated_text("a b c").split()[:3]) == ["a", "b", "c"]


def test_head_roles_and_logit_lens_on_the_tiny_model(tiny):
    roles = vt.head_roles(tiny, "decoder", TEXT)
    assert set(roles) == {"previous", "self", "first", "duplicate", "induction"}
    assert all(r.shape == (2, 2) and ((r >= 0) & (r <= 1 + 1e-9)).all() for r in roles.values())
    assert set(vt.head_roles(tiny, "cross", TEXT)) == {"first", "aligning"}
    lens = vt.logit_lens(tiny, TEXT)
    tr = vt.trace(tiny, TEXT)
    assert lens.probs.shape == (2, len(tr.tgt_tokens))
    assert lens.output == tr.pred_tokens  # the last layer's top token is the model's own


def test_the_logit_lens_unembeds_a_few_rows_at_a_time(tiny, monkeypatch):
    whole = vt.logit_lens(tiny, TEXT)
    rows: list[int] = []
    unembed = tiny.unembed
    monkeypatch.setattr(tiny, "unembed", lambda x: rows.append(len(x)) or unembed(x))
    width = tiny.module.cfg.d_model
    monkeypatch.setattr(
        lens_module, "LENS_CELLS", 2 * unembed(torch.zeros(1, width, device=tiny.device)).shape[-1]
    )
    chunked = vt.logit_lens(tiny, TEXT)
    assert max(rows) == 2 and sum(rows) == 1 + whole.probs.size  # the width, then 2 at a time
    np.testing.assert_allclose(chunked.probs, whole.probs, atol=1e-6)
    assert chunked.tokens == whole.tokens


class _Stop(Exception):
    pass


JOBS = {  # issue 28 point 4: the page's three other long jobs, each with its progress and stop
    "lens": lambda model, progress, stop=None: vt.logit_lens(model, TEXT, None, progress, stop),
    "roles": lambda model, progress, stop=None: vt.head_roles(
        model, "decoder", TEXT, None, progress, stop
    ),
    "patching": lambda model, progress, stop=None: vt.patch_heads(
        model, TEXT, OTHER, "cross", progress, stop
    ),
}
STOPPABLE = {  # every long job of the page, by its stop argument
    **JOBS,
    "importance": lambda model, progress, stop=None: vt.head_importance(
        model, TEXT, "cross", None, "zero", progress, stop
    ),
}


@pytest.mark.parametrize("job", JOBS)
def test_progress_rises_to_one_and_leaves_the_result_unchanged(tiny, job):
    fractions: list[float] = []
    got, plain = JOBS[job](tiny, fractions.append), JOBS[job](tiny, None)
    got, plain = (getattr(x, "probs", x) for x in (got, plain))  # the lens: its probabilities
    # the progress hooks read z only; the fused attention kernel differs by float rounding
    got, plain = (x if isinstance(x, dict) else {"": x} for x in (got, plain))
    assert list(got) == list(plain)
    for role in got:
        np.testing.assert_allclose(got[role], plain[role], atol=1e-5)
    assert len(fractions) > 3 and fractions == sorted(fractions)
    assert fractions[0] < 0.2 and fractions[-1] == 1.0


@pytest.mark.parametrize("job", JOBS)
def test_a_stop_from_progress_ends_the_job_and_leaves_the_model_clean(tiny, job, same_trace):
    plain = vt.trace(tiny, TEXT)
    seen: list[float] = []

    def stop_past_half(fraction: float) -> None:
        seen.append(fraction)
        if fraction > 0.5:
            raise _Stop

    with pytest.raises(_Stop):
        JOBS[job](tiny, stop_past_half)
    assert seen[-1] < 1.0  # stopped before the end
    assert same_trace(vt.trace(tiny, TEXT), plain)  # no hook, no step callback left


@pytest.mark.parametrize("job", JOBS)
def test_its_stop_token_ends_the_job_and_leaves_the_model_clean(tiny, job, same_trace):
    plain = vt.trace(tiny, TEXT)
    stop, seen = StopToken(), []

    def progress(fraction: float) -> None:
        seen.append(fraction)
        if fraction > 0.5:
            stop.set()  # as a Stop pressed in another thread

    with pytest.raises(Cancelled):
        JOBS[job](tiny, progress, stop)
    assert seen[-1] < 1.0  # ended at the next progress point, before the end
    assert same_trace(vt.trace(tiny, TEXT), plain)  # no hook, no step callback left


@pytest.mark.parametrize("job", STOPPABLE)
def test_a_stop_set_before_the_start_ends_the_job_without_progress_asked(tiny, job, same_trace):
    plain, stop = vt.trace(tiny, TEXT), StopToken()
    stop.set()
    with pytest.raises(Cancelled):  # no progress asked: the token alone still ends it
        STOPPABLE[job](tiny, None, stop)
    assert same_trace(vt.trace(tiny, TEXT), plain)


def test_the_lens_cuts_tokens_to_their_cells_and_keeps_them_whole_in_the_hover():
    inputs = ("The", "capital", "of", "France", "is", "Paris", ".", "↵", "↵", "The")  # smollm2's
    tokens = (("dismantle", "and", "<s>", "x", "answer", "The", "a", "b", "c", "d"),) * 2
    trace = head_figures.lens_figure(inputs, tokens, np.full((2, 10), 0.5)).data[0]
    room = head_figures.LENS_ROW_CHARS // 10
    assert trace.texttemplate == "%{text}" and room >= 2
    shown = list(trace.text)
    assert all(len(html.unescape(t)) <= room for row in shown for t in row)  # never wider
    assert list(shown[0][:3]) == ["di…", "and", "&lt;s&gt;"]  # cut at the start, markup escaped
    assert [list(row) for row in trace.customdata] == [
        [html.escape(t, quote=False) for t in row] for row in tokens]  # fmt: skip
    assert "%{customdata}" in trace.hovertemplate
    wide = head_figures.lens_figure(("a",) * 19, (("tok",) * 19,), np.zeros((1, 19)))
    assert wide.data[0].texttemplate is None and "in the hover" in wide.layout.title.text
    few = head_figures.lens_figure(("a", "b"), (("dismantle", "x"),), np.zeros((1, 2)))
    assert list(few.data[0].text[0]) == ["dismantle", "x"]  # room for the whole token
