"""Word-level distillation (``distill_kd``): the teacher's distributions line up with the
positions a student batch predicts, and the update's loss is the mix it says it is."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.networks.paper_decode import pad_batch, source_mask
from viz_transformer.text.spm import SentencePieceVocab
from viz_transformer.training.en_pt import student_init as si
from viz_transformer.training.en_pt.bitext import teacher_translate
from viz_transformer.training.en_pt.distill_kd import kd_train_step, teacher_log_probs
from viz_transformer.training.steps import train_step

CPU = torch.device("cpu")  # the tiny model's, where its tensors are made
# the first two have the same number of source pieces and translations of different lengths
SOURCES = ("We love you.", "He is tired.", "The weather will be cold and rainy tomorrow.")


@pytest.fixture(scope="module")
def teacher():
    net = si.load_teacher()
    net.fuse()
    return net


@pytest.fixture(scope="module")
def vocab(tmp_path_factory: pytest.TempPathFactory) -> SentencePieceVocab:
    return SentencePieceVocab.load(si.teacher_vocab(tmp_path_factory.mktemp("vocab")))


@pytest.mark.needs("bergamot")
def test_the_teachers_log_probs_line_up_with_the_students_targets(teacher, vocab):
    src = [vocab.encode(s) for s in SOURCES]
    tgt = [[vocab.bos_id, *vocab.encode(t)] for t in teacher_translate(list(SOURCES))]
    assert len(src[0]) == len(src[1]) != len(src[2]) and len(tgt[0]) != len(tgt[1])
    lp = teacher_log_probs(teacher, src, tgt, si.ADDED)
    assert lp.shape == (3, max(map(len, tgt)) - 1, len(vocab))
    for i in range(3):
        n = len(tgt[i]) - 1  # positions predicting the words and </s>
        rows = lp[i, :n]
        ones = torch.ones(n, device=lp.device)
        torch.testing.assert_close(rows.exp().sum(-1), ones, atol=1e-4, rtol=0)
        assert bool((rows[:, : si.ADDED] <= -1e4).all())  # <pad> and <s> are never predicted
        # teacher-forced on its own translation, the teacher's port picks that translation
        assert rows.argmax(-1).tolist() == tgt[i][1:], SOURCES[i]
        alone = teacher_log_probs(teacher, [src[i]], [tgt[i]], si.ADDED)[0]  # no padding
        torch.testing.assert_close(rows, alone[:n], atol=1e-4, rtol=1e-4)


def _tiny() -> tuple[Transformer, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=12, d_model=16, n_heads=2, n_encoder_layers=1,
                            n_decoder_layers=1, d_ff=32, dropout=0.0, max_len=32)  # fmt: skip
    src = pad_batch([[4, 5, 6, 2], [7, 8, 2]], 0, CPU)
    tgt = pad_batch([[1, 9, 10, 11, 2], [1, 5, 2]], 0, CPU)
    return Transformer(cfg), src, tgt


def _optimiser(model: Transformer) -> tuple[torch.optim.Optimizer, object]:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)


def test_without_the_teacher_the_step_is_train_steps():
    model, src, tgt = _tiny()
    twin = copy.deepcopy(model)
    anything = torch.randn(2, tgt.shape[1] - 1, 12, device=CPU).log_softmax(-1)
    loss = kd_train_step(model, *_optimiser(model), src, tgt, anything, 0, 0.1, kd_weight=0.0)[0]
    reference = train_step(twin, *_optimiser(twin), src, tgt, 0, 0.1)[0]
    torch.testing.assert_close(loss, reference)
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_the_soft_loss_is_the_cross_entropy_to_the_teachers_distribution():
    model, src, tgt = _tiny()
    with torch.no_grad():
        logits = model(src, tgt[:, :-1], source_mask(src, 0))
    gold = tgt[:, 1:]
    one_hot = torch.full((*gold.shape, 12), -1e4, device=CPU).scatter(-1, gold[..., None], 0.0)
    loss = kd_train_step(model, *_optimiser(model), src, tgt, one_hot, 0, 0.1, kd_weight=1.0)[0]
    expected = F.cross_entropy(logits.reshape(-1, 12), gold.reshape(-1), ignore_index=0)
    torch.testing.assert_close(loss, expected)  # pad positions (0) do not count
    uniform = torch.full((*gold.shape, 12), -math.log(12.0), device=CPU)
    model, src, tgt = _tiny()
    loss = kd_train_step(model, *_optimiser(model), src, tgt, uniform, 0, 0.0, kd_weight=1.0)[0]
    keep = gold != 0
    expected = -logits.log_softmax(-1).mean(-1)[keep].mean()
    torch.testing.assert_close(loss, expected)
