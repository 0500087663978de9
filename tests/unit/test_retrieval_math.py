"""The retrieval-heads score's pieces (analysis.retrieval): the needle prompt, its token spans, and
copy-paste scoring from attention rows, dense and lazy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from viz_transformer.analysis.retrieval import needle as nd
from viz_transformer.analysis.retrieval import scores as sc
from viz_transformer.records.lazy import LazyPatterns

HAY = "One two three. Four five six! Seven eight nine? Ten eleven twelve."
NEEDLE = "the key is under the mat"


@pytest.mark.parametrize(("depth", "cut"), [(0.0, 0), (0.5, 30), (1.0, len(HAY))])
def test_needle_goes_at_the_nearest_sentence_boundary(depth: float, cut: int) -> None:
    p = nd.build_prompt(HAY, NEEDLE, depth)
    lo, hi = p.needle_span
    assert p.text[lo:hi] == NEEDLE
    assert lo == (cut + 1 if cut == len(HAY) else cut)
    assert p.text.endswith("\n\nthe key is")
    assert p.text[p.answer_span[0] : p.answer_span[1]] == "under the mat"
    assert (p.first, p.second) == ("the key is", "under the mat")


def test_boundaries_are_sentence_starts() -> None:
    assert nd.boundaries(HAY) == [0, 15, 30, 48, len(HAY)]


@pytest.mark.parametrize(("words", "first"), [(2, 1), (3, 1), (5, 2), (6, 3)])
def test_first_half_is_half_the_words_rounded_down(words: int, first: int) -> None:
    needle = " ".join(f"w{i}" for i in range(words))
    p = nd.build_prompt(HAY, needle)
    assert p.first.split() == needle.split()[:first]
    assert p.second.split() == needle.split()[first:]


@pytest.mark.parametrize(
    ("hay", "needle", "said"),
    [
        (HAY, "   ", "needle is empty"),
        ("", NEEDLE, "haystack is empty"),
        (HAY, "alone", "at least two words"),
        ("short text here.", "a needle longer than the text", "not shorter than the haystack"),
    ],
)
def test_bad_needles_are_named(hay: str, needle: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        nd.build_prompt(hay, needle)


def test_depth_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match="between 0"):
        nd.build_prompt(HAY, NEEDLE, 1.5)


def test_token_span_overlaps_and_skips_specials() -> None:
    offsets = [(0, 0), (0, 3), (3, 7), (7, 8), (8, 12)]  # a special token first
    assert nd.token_span(offsets, (4, 8)) == [2, 3]
    assert nd.token_span(offsets, (0, 3)) == [1]


@pytest.mark.parametrize(
    ("answer", "output", "recall"),
    [
        ("under the  mat", " Under the mat, said she", 1.0),  # case, spacing, punctuation
        ("under the mat", " under a mat", 2 / 3),
        ("a sandwich and a park", " a sandwich", 2 / 5),  # " a" twice in the answer, once here
        ("a sandwich and a park", " a a a park", 3 / 5),  # clipped at the answer's count
        ("on a sunny day.", " the rain", 0.0),
        ("...", " anything", 0.0),  # no word: nothing to recall
    ],
)
def test_rouge1_recall_counts_clipped_words(answer: str, output: str, recall: float) -> None:
    assert nd.rouge1_recall(answer, output) == pytest.approx(recall)


def test_found_is_recall_above_one_half() -> None:
    assert nd.found("under the mat", " under a mat")  # 2/3
    assert not nd.found("under the mat now", " under the")  # 2/4 is not above 0.5
    assert nd.FOUND_AT == 0.5


def test_step_rows_are_the_predicting_positions() -> None:
    assert sc.step_rows(5, 3).tolist() == [4, 5, 6]
    with pytest.raises(ValueError):
        sc.step_rows(0, 2)


def _causal_rows(n: int, seed: int) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q, k = (
        torch.randn(2, 3, n, 4, generator=g, device="cpu"),
        torch.randn(2, 3, n, 4, generator=g, device="cpu"),
    )
    s = q @ k.transpose(-1, -2)
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device="cpu").triu(1), float("-inf"))
    return s.softmax(-1).numpy().astype(np.float32), q, k


def test_rows_argmax_and_sink_dense_equal_lazy() -> None:
    dense, q, k = _causal_rows(12, 0)  # (2 layers, 3 heads, 12, 12)
    rows = np.array([8, 9, 10])
    argmax, sink = sc.row_argmax_and_sink(dense, rows)
    assert argmax.tolist() == dense[:, :, rows].argmax(-1).tolist()
    np.testing.assert_allclose(sink, dense[:, :, rows, 0].mean(-1), rtol=1e-6)
    lazy = LazyPatterns(list(q), list(k), causal=True)
    argmax2, sink2 = sc.row_argmax_and_sink(lazy, rows)
    assert argmax2.tolist() == argmax.tolist()
    np.testing.assert_allclose(sink2, sink, rtol=1e-5, atol=1e-7)


def test_copy_scoring_counts_distinct_answer_positions_holding_the_token() -> None:
    ids = [0, 5, 6, 7, 8, 1, 5, 6, 7, 8, 9]  # answer (second half) at positions 3, 4: 7, 8
    answer = [3, 4]
    generated = [7, 8, 8]  # three output steps
    argmax = np.array(
        [
            [[3, 4, 4], [3, 2, 1], [8, 9, 4]],  # copies 3 and 4 (4 twice); 3 only; 4 only
            [[4, 3, 0], [0, 0, 0], [1, 1, 1]],  # wrong tokens at answer positions; no copies
        ]
    )  # [layers=2, heads=3, steps=3]
    hits = sc.copy_hits(argmax, generated, ids, answer)
    assert hits[0, 0].tolist() == [3, 4, 4]
    assert hits[0, 2].tolist() == [-1, -1, 4]  # position 8 holds 7 but is no answer position
    got = sc.retrieval_scores(hits, len(answer))
    np.testing.assert_allclose(got, [[1.0, 0.5, 0.5], [0.0, 0.0, 0.0]])
    assert sc.first_copy(hits, 0, 2) == 2
    assert sc.first_copy(hits, 1, 0) is None
    assert sc.retrieval_scores(hits, 0).sum() == 0


def test_the_built_in_haystack_is_long_and_has_sentence_boundaries() -> None:
    from viz_transformer.text.corpora import HAYSTACKS, builtin_haystack

    for name in HAYSTACKS:
        text = builtin_haystack(name)
        assert len(text.split()) > 1_000 and len(nd.boundaries(text)) > 50
    with pytest.raises(ValueError, match="unknown haystack"):
        builtin_haystack("nope")


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 28_311_552, 2**40 + 3])
def test_identity_samples_spread_over_the_tensor_and_stay_inside(n: int) -> None:
    from viz_transformer.analysis.retrieval.identity import sample_at

    at = sample_at(n)
    assert len(at) == min(64, n) and at[0] == 0 and at[-1] == n - 1
    assert at == sorted(set(at)) and all(0 <= i < n for i in at)
