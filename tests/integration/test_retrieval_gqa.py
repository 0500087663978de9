"""Retrieval heads where real models put their hard cases (testing.planted_gqa): grouped-query
attention 4:1 with the copying query head on key/value head 1, and a byte-level BPE tokenizer with
a BOS token and needle words in two pieces. The planted head is found with retrieval 1 at three
depths and every other head below it, dense and lazy captures agree with a reference recomputed
from the trace, and the question prompt finds the same head."""

from __future__ import annotations

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.testing import planted_gqa as pg

PIECES = ["glen", "##dral", "sul", "##varo", "thus", "##kin"]  # the answer's tokens, as shown


@pytest.fixture(scope="module")
def gqa(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    return vt.load_model(f"hf:{pg.build_planted_gqa(tmp_path_factory.mktemp('planted_gqa'))}")


def reference(model: vt.LoadedModel, r) -> np.ndarray:
    """Wu et al.'s copy score recomputed from a dense ``vt.trace`` of prompt + output, with the
    answer positions found again from the prompt's text."""
    tr = vt.trace(model, r.prompt + r.output)
    att = np.asarray(tr.decoder)  # [L, H, T, T]
    ids = model.encode_text(r.prompt + r.output)
    p = len(model.encode_text(r.prompt))
    start = r.prompt.index(r.answer, r.prompt.index(pg.NEEDLE))
    enc = model.tokenizer(r.prompt, return_offsets_mapping=True)
    answer = {i for i, (a, b) in enumerate(enc["offset_mapping"]) if start <= a + 1 and a < b}
    answer &= {i for i, (a, _) in enumerate(enc["offset_mapping"]) if a < start + len(r.answer)}
    score = np.zeros(att.shape[:2])
    for (layer, head), _ in np.ndenumerate(score):
        rows = att[layer, head, p - 1 : len(ids) - 1]  # row p-1+i predicts output token i
        got = {
            int(j) for i, j in enumerate(rows.argmax(-1)) if j in answer and ids[j] == ids[p + i]
        }
        score[layer, head] = len(got) / len(answer)
    return score


def test_the_model_and_tokenizer_are_the_hard_case(gqa) -> None:
    config = gqa.module.config
    assert (config.num_attention_heads, config.num_key_value_heads) == (8, 2)
    assert pg.PLANTED[1] // 4 == 1  # the copying query head reads key/value head 1
    enc = gqa.tokenizer(f"the cat. {pg.NEEDLE}", return_offsets_mapping=True)
    tokens = gqa.tokenizer.convert_ids_to_tokens(enc["input_ids"])
    assert tokens[:3] == ["<s>", "the", "Ġcat"] and enc["offset_mapping"][0] == (0, 0)
    assert tokens[4:8] == ["Ġzor", "blax", "Ġquin", "tvex"]  # two pieces a word, "Ġ" spaces
    assert enc["offset_mapping"][4] == (8, 12)  # a byte-level offset holds the space before
    text = "the cat.\n\nzorblax  quintvex"
    assert gqa.tokenizer.decode(gqa.tokenizer(text)["input_ids"], skip_special_tokens=True) == text


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_the_planted_head_alone_scores_1_at_every_depth(gqa, depth: float) -> None:
    r = vt.retrieval_heads(gqa, pg.haystack(), pg.NEEDLE, depth)
    assert r.aligned and not r.messages and r.found and r.recall == 1.0
    assert r.output == " glendral sulvaro thuskin"
    assert r.prompt_tokens[0] == "<s>" and len(r.needle_positions) == 12
    assert [r.prompt_tokens[i] for i in r.answer_positions] == PIECES
    assert r.retrieval[pg.PLANTED] == 1.0
    others = np.delete(r.retrieval.ravel(), pg.PLANTED[0] * 8 + pg.PLANTED[1])
    assert (others < 1.0).all() and r.table.iloc[0][["layer", "head"]].tolist() == [*pg.PLANTED]
    np.testing.assert_allclose(r.retrieval, reference(gqa, r), atol=1e-6)
    row, key = r.copy_step(*pg.PLANTED)
    assert (row, key) == (r.prompt_length - 1, r.answer_positions[0])
    assert r.copy_distance == row - key and r.passed >= 1


def test_the_lazy_capture_maps_each_query_head_to_its_key_head(gqa, monkeypatch) -> None:
    dense = vt.retrieval_heads(gqa, pg.haystack(20, seed=4), pg.NEEDLE, 0.4)
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)  # every input takes the long-input path
    lazy = vt.retrieval_heads(gqa, pg.haystack(20, seed=4), pg.NEEDLE, 0.4)
    assert type(lazy.trace.decoder).__name__ == "LazyPatterns"
    np.testing.assert_array_equal(lazy.hits, dense.hits)
    np.testing.assert_allclose(lazy.sink, dense.sink, atol=1e-5)
    assert lazy.retrieval[pg.PLANTED] == 1.0


def test_the_question_prompt_finds_the_same_head(gqa) -> None:
    ask = {"prompt": "question", "question": pg.QUESTION}
    q = vt.retrieval_heads(gqa, pg.haystack(), pg.NEEDLE, 0.5, **ask)
    assert q.form == "question" and q.answer == "glendral sulvaro thuskin"
    assert q.prompt.endswith(f"Question: {pg.QUESTION}\nAnswer:")
    assert [q.prompt_tokens[i] for i in q.answer_positions] == PIECES and q.found
    assert q.retrieval[pg.PLANTED] == 1.0
    np.testing.assert_allclose(q.retrieval, reference(gqa, q), atol=1e-6)
    c = vt.retrieval_heads(gqa, pg.haystack(), pg.NEEDLE, 0.5)
    both = vt.compare_retrieval(c, q)
    assert pg.PLANTED in both.both and (both.first, both.second) == ("copy", "question")
    flagged = zip(*np.nonzero(c.retrieval >= 0.1), strict=True)
    copy_only = {(int(a), int(b)) for a, b in flagged if q.retrieval[a, b] < 0.1}
    assert set(both.only_first) == copy_only
    assert "L1 H6" in both.summary()
