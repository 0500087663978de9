"""A model's tokenizer fingerprint, read from its vocabulary files before it loads: equal keys
for models that split every text alike, different keys for models that do not."""

from __future__ import annotations

from pathlib import Path

import pytest
import sentencepiece as spm
from transformers import AutoTokenizer

import viz_transformer as vt
from viz_transformer.models.bergamot_spec import one_file
from viz_transformer.models.tokenizers import tokenizer_key
from viz_transformer.testing.hf import BUILDERS

SENTENCES = (
    "The agreement on the European Economic Area was signed in August 1992.",
    "O acordo foi assinado em agosto, às 10h30.",
    "Unbelievably, the ūnïcødé café closed!",
)


def _spm(name: str) -> spm.SentencePieceProcessor:
    folder = Path(vt.model_info(name).path)
    file = folder / "spm.model" if name.startswith("paper") else one_file(folder, "vocab.*.spm")
    return spm.SentencePieceProcessor(model_file=str(file))


@pytest.mark.needs("bergamot")
def test_a_student_with_its_teachers_pieces_has_its_key_and_its_tokens():
    # paper-en-pt's vocabulary is bergamot-en-pt's with <pad> and <s> added and renumbered
    keys = {n: tokenizer_key(vt.model_info(n)) for n in ("paper-en-pt", "bergamot-en-pt")}
    assert keys["paper-en-pt"] == keys["bergamot-en-pt"]
    student, teacher = _spm("paper-en-pt"), _spm("bergamot-en-pt")
    assert student.get_piece_size() != teacher.get_piece_size()  # the files do differ
    for text in SENTENCES:
        assert student.encode(text, out_type=str) == teacher.encode(text, out_type=str)


@pytest.mark.needs("bergamot")
def test_models_that_split_text_differently_have_different_keys():
    en_pt, pt_en = _spm("bergamot-en-pt"), _spm("bergamot-pt-en")
    assert any(en_pt.encode(t, out_type=str) != pt_en.encode(t, out_type=str) for t in SENTENCES)
    names = ("bergamot-en-pt", "bergamot-pt-en", "paper-reverse", "paper-dates", "paper-sov")
    keys = [tokenizer_key(vt.model_info(n)) for n in names]
    assert None not in keys and len(set(keys)) == len(names)


@pytest.mark.parametrize("family", ["gpt2", "marian", "bert"])
def test_a_copy_of_a_hugging_face_folder_has_the_same_key_another_family_not(tmp_path, family):
    first, copy = (BUILDERS[family](tmp_path / n) for n in ("first", "copy"))
    key = tokenizer_key(vt.model_info(f"hf:{first}"))
    assert key is not None and key == tokenizer_key(vt.model_info(f"hf:{copy}"))
    other = "bert" if family != "bert" else "gpt2"
    assert key != tokenizer_key(vt.model_info(f"hf:{BUILDERS[other](tmp_path / 'other')}"))
    tokens = [AutoTokenizer.from_pretrained(p).tokenize(SENTENCES[0]) for p in (first, copy)]
    assert tokens[0] == tokens[1]
