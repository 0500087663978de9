"""Retrieval heads on a tiny Llama with one planted copying head (testing.planted): found with
retrieval 1, scores equal to a reference from ``vt.trace`` of prompt + output (dense and lazy),
the token alignment checked, bad input named, sweeps resumed and stopped."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.analysis.retrieval import run as rr
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.progress import Cancelled, StopToken
from viz_transformer.testing.planted import NEEDLE, PLANTED, build_planted, haystack


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    return vt.load_model(f"hf:{build_planted(tmp_path_factory.mktemp('planted'))}")


def reference(model: vt.LoadedModel, result: rr.RetrievalResult) -> tuple[np.ndarray, np.ndarray]:
    """Wu et al.'s score recomputed from a dense ``vt.trace`` of prompt + output."""
    tr = vt.trace(model, result.prompt + result.output)
    att = np.asarray(tr.decoder)  # [L, H, T, T]
    ids = model.encode_text(result.prompt + result.output)
    p = len(model.encode_text(result.prompt))
    answer = set(result.answer_positions)
    copied: dict[tuple[int, int], set[int]] = {}
    sink = np.zeros(att.shape[:2])
    for (layer, head), _ in np.ndenumerate(sink):
        rows = att[layer, head, p - 1 : len(ids) - 1]  # row p-1+i predicts output token i
        sink[layer, head] = rows[:, 0].mean()
        for i, row in enumerate(rows):
            j = int(row.argmax())
            if j in answer and ids[j] == ids[p + i]:
                copied.setdefault((layer, head), set()).add(j)
    score = np.zeros(att.shape[:2])
    for (layer, head), got in copied.items():
        score[layer, head] = len(got) / len(answer)
    return score, sink


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_planted_head_retrieves_and_matches_the_trace(planted, depth: float) -> None:
    r = vt.retrieval_heads(planted, haystack(), NEEDLE, depth)
    assert r.aligned and not r.messages and r.found
    assert r.output.startswith(" iota kappa lambda")
    assert len(r.needle_positions) == 6 and len(r.answer_positions) == 3
    assert [r.prompt_tokens[i] for i in r.answer_positions] == ["iota", "kappa", "lambda"]
    best = r.table.iloc[0]
    assert (best["layer"], best["head"], best["retrieval"]) == (*PLANTED, 1.0)
    assert (r.table.retrieval.iloc[1:] < 1.0).all()
    assert list(r.table.columns) == ["layer", "head", "retrieval", "sink"]
    assert r.table.retrieval.is_monotonic_decreasing and len(r.table) == 8
    score, sink = reference(planted, r)
    np.testing.assert_allclose(r.retrieval, score, atol=0.05)
    np.testing.assert_allclose(r.sink, sink, atol=0.05)
    assert r.flagged(1.0) == [(*PLANTED, 1.0)]
    row, key = r.copy_step(*PLANTED)
    assert row == len(r.prompt_tokens) - 1 and key == r.answer_positions[0]


def test_lazy_capture_gives_the_same_scores(planted, monkeypatch) -> None:
    dense = vt.retrieval_heads(planted, haystack(), NEEDLE, 0.3)
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)  # every input takes the long-input path
    lazy = vt.retrieval_heads(planted, haystack(), NEEDLE, 0.3)
    assert isinstance(lazy.trace.decoder, LazyPatterns)
    np.testing.assert_array_equal(lazy.hits, dense.hits)
    np.testing.assert_allclose(lazy.sink, dense.sink, atol=1e-5)


def test_a_tokenizer_that_reads_the_output_otherwise_is_named(planted, monkeypatch) -> None:
    # decoding drops the spaces between words: " iotakappa...", one unknown word read back
    def joined(ids: list[int]) -> str:
        return " " + planted.tokenizer.decode(ids).replace(" ", "")

    monkeypatch.setattr(planted, "decode", joined)
    r = vt.retrieval_heads(planted, haystack(), NEEDLE, 0.5)
    assert not r.aligned
    assert "does not read prompt + output back" in r.messages[0]
    assert r.rows[0] == len(r.prompt_tokens) - 1  # the prompt still lines up
    assert r.retrieval.max() < 1.0  # "[UNK]" is no needle token: nothing copied it


def test_bad_input_gets_a_message(planted, load_tiny) -> None:
    cases = [
        (planted, haystack(), "  ", "needle is empty"),
        (planted, "the cat sat.", NEEDLE, "not shorter than the haystack"),
        (planted, haystack(200), NEEDLE, "past .* context of 512 tokens"),
        (load_tiny("bart"), haystack(), NEEDLE, "encoder-decoder"),
    ]
    for model, hay, needle, said in cases:
        with pytest.raises(ValueError, match=said):
            vt.retrieval_heads(model, hay, needle)


def test_sweep_means_resumes_and_stops(planted, tmp_path: Path, monkeypatch) -> None:
    texts, depths = [haystack(10, seed=1), haystack(14, seed=2)], [0.2, 0.8]
    kept: dict = {}
    stop = StopToken()
    seen: list[float] = []

    def progress(f: float) -> None:
        seen.append(f)
        if len(kept) == 2:  # Stop pressed once two runs are done
            stop.set()

    with pytest.raises(Cancelled):
        vt.retrieval_heads(planted, texts, NEEDLE, depths=depths, out=kept, progress=progress,
                           stop=stop)  # fmt: skip
    assert len(kept) == 2  # two runs finished before the stop: kept
    assert seen == sorted(seen) and 0 < seen[-1] <= 0.5
    calls = []
    real = rr.one_run
    monkeypatch.setattr(
        "viz_transformer.analysis.retrieval.sweep.one_run",
        lambda *a, **k: calls.append(a) or real(*a, **k),
    )
    sweep = vt.retrieval_heads(planted, texts, NEEDLE, depths=depths, out=kept)
    assert len(calls) == 2 and len(sweep.runs) == 4  # only the missing runs ran
    t = sweep.table
    assert tuple(t.iloc[0][["layer", "head", "retrieval", "retrieval_std"]]) == (
        *PLANTED, 1.0, 0.0)  # fmt: skip
    runs = np.stack([r.retrieval for r in sweep.runs])
    np.testing.assert_allclose(t.set_index(["layer", "head"]).retrieval.loc[(1, 0)],
                               runs[:, 1, 0].mean(), rtol=1e-6)  # fmt: skip
    assert sweep.found == 1.0 and (t.runs == 4).all()
    folder = vt.retrieval_heads(planted, texts[:1], NEEDLE, depths=[0.5], out=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 1
    again = vt.retrieval_heads(planted, texts[:1], NEEDLE, depths=[0.5], out=str(tmp_path))
    np.testing.assert_array_equal(again.runs[0].retrieval, folder.runs[0].retrieval)


def test_a_grid_of_depths_and_lengths_holds_each_cell(planted, tmp_path: Path) -> None:
    texts, depths, lengths = [haystack(60, seed=3)], [0.1, 0.5, 0.9], [60, 150]
    seen: list[float] = []
    sweep = vt.retrieval_heads(
        planted, texts, NEEDLE, depths=depths, lengths=lengths, out=tmp_path, progress=seen.append
    )
    assert (sweep.depths, sweep.lengths) == (tuple(depths), tuple(lengths))
    assert len(sweep.runs) == 6 and seen[-1] == pytest.approx(1.0) and seen == sorted(seen)
    scores = sweep.scores()
    assert scores.shape == (3, 2, 2, 4) and (scores[:, :, PLANTED[0], PLANTED[1]] == 1.0).all()
    assert (np.delete(scores.reshape(6, 8), PLANTED[0] * 4 + PLANTED[1], axis=1) < 1.0).all()
    tokens = sweep.prompt_lengths()
    assert (tokens[:, 0] <= 60).all() and (tokens[:, 1] <= 150).all() and (tokens[:, 1] > 120).all()
    (run,) = sweep.cell(0.9, 150)
    r = run.result
    assert (run.length, run.haystack, r.depth, r.trace) == (150, 0, 0.9, None)
    row, key = r.copy_step(*PLANTED)  # what a map zoomed on the needle needs
    assert key == r.answer_positions[0] and row == r.rows[0]
    assert vt.trace(planted, r.text).tgt_tokens[key] == r.prompt_tokens[key] == "iota"
    assert r.copy_distance == row - key > 0 and r.prompt_length == len(r.prompt_tokens)
    assert f"of {r.prompt_length:,} tokens" in r.summary() and "0.1" in r.summary()
    assert sweep.found_share().tolist() == [[1.0, 1.0]] * 3
    with pytest.raises(ValueError, match="too short for a prompt of 900"):
        vt.retrieval_heads(planted, texts, NEEDLE, lengths=[900])


def test_a_resumed_sweep_names_each_text_by_its_own_index(planted, tmp_path: Path) -> None:
    texts = [haystack(10, seed=1), haystack(14, seed=2)]
    first = vt.retrieval_heads(planted, texts, NEEDLE, depths=[0.5], out=tmp_path)
    assert [r.haystack for r in first.runs] == [0, 1]
    again = vt.retrieval_heads(planted, texts[::-1], NEEDLE, depths=[0.5], out=tmp_path)
    assert [r.haystack for r in again.runs] == [0, 1]  # read back, each under its new index
    assert again.runs[0].result.prompt == first.runs[1].result.prompt
    kept: dict = {}
    vt.retrieval_heads(planted, texts, NEEDLE, depths=[0.5], out=kept)
    swapped = vt.retrieval_heads(planted, texts[::-1], NEEDLE, depths=[0.5], out=kept)
    assert [r.result.prompt for r in swapped.runs] == [r.result.prompt for r in again.runs]
    assert [r.haystack for r in swapped.runs] == [0, 1]


def test_a_stop_reaches_inside_the_trace_pass(planted, monkeypatch) -> None:
    monkeypatch.setattr("viz_transformer.analysis.heads.TICK_S", 0.0)  # a tick at every layer
    seen: list[float] = []
    vt.retrieval_heads(planted, haystack(), NEEDLE, progress=seen.append)
    assert seen.count(0.4) >= 1 + 2  # the trace's pass ticks at each of its 2 layers
    stop = StopToken()

    def press_in_the_pass(f: float) -> None:
        if f == 0.4 and seen.append(f) is None and len(seen) > 1:
            stop.set()

    seen.clear()
    with pytest.raises(Cancelled):
        vt.retrieval_heads(planted, haystack(), NEEDLE, progress=press_in_the_pass, stop=stop)
    assert len(seen) == 2  # ended at the first tick inside the pass


def test_out_and_only_found_are_refused_for_a_single_run(planted) -> None:
    for kwargs in ({"out": {}}, {"only_found": True}):
        with pytest.raises(ValueError, match=r"belongs to a sweep.*depths=\[0.5\]"):
            vt.retrieval_heads(planted, haystack(), NEEDLE, **kwargs)


def test_only_found_counts_the_runs_that_found_the_needle(planted, monkeypatch) -> None:
    texts = [haystack(10, seed=1), haystack(14, seed=2)]
    real = rr.one_run

    def failing_second(model, hay, *a, **k):  # the second text's runs "miss" the needle
        r = real(model, hay, *a, **k)
        return r if hay.startswith(texts[0][:20]) else replace(r, found=False, recall=0.2)

    monkeypatch.setattr("viz_transformer.analysis.retrieval.sweep.one_run", failing_second)
    every = vt.retrieval_heads(planted, texts, NEEDLE, depths=[0.3])
    found = vt.retrieval_heads(planted, texts, NEEDLE, depths=[0.3], only_found=True)
    assert every.found == found.found == 0.5
    assert [r.haystack for r in found.counted] == [0] and len(every.counted) == 2
    np.testing.assert_allclose(found.mean_retrieval, found.runs[0].retrieval)
    both = (every.runs[0].retrieval + every.runs[1].retrieval) / 2
    np.testing.assert_allclose(every.mean_retrieval, both)
    assert (found.table.runs == 1).all() and "the runs that found the needle (1)" in found.summary()


def test_the_model_identity_reads_a_sample_and_moves_with_the_weights(planted, tmp_path) -> None:
    from viz_transformer.analysis.retrieval.identity import model_identity

    again = vt.load_model(f"hf:{build_planted(tmp_path / 'again')}")
    assert model_identity(again) == model_identity(planted)  # the same weights, another object
    other = vt.load_model(f"hf:{build_planted(tmp_path / 'seed1', seed=1)}")
    assert model_identity(other) != model_identity(planted)
    key = rr.__name__  # any text: a run's key holds the identity
    from viz_transformer.analysis.retrieval.sweep import run_key

    assert run_key(again, key, NEEDLE, 0.5) != run_key(other, key, NEEDLE, 0.5)
    with torch.no_grad():  # a retrained layer moves the samples
        again.module.model.layers[1].self_attn.q_proj.weight.mul_(1.01)
    from viz_transformer.analysis.retrieval import identity

    identity._IDS.pop(again)
    assert model_identity(again) != model_identity(planted)


@pytest.mark.needs("notebook")
def test_the_notebook_opens_a_head_view_on_the_best_head(planted) -> None:
    r = vt.retrieval_heads(planted, haystack(), NEEDLE)
    layer, head, _ = r.flagged()[0]
    view = vt.head_view(r.trace, "decoder", layer, head)
    assert (view.kind, view.layer, view.head) == ("decoder", *PLANTED)
