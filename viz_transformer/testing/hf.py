"""Hugging Face models with random weights and real tokenizers (``testing.hf_tokenizers``), saved
as folders that load as ``hf:<folder>``: six tiny families for tests (d_model 16 to 32, two
layers), and two at benchmark sizes (an opus-mt-en-de-size Marian, a 4,096-position BERT). Each
draws its weights from a seeded generator of its own, so a model is the same whatever ran
before it, and building one leaves torch's global generator as it found it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    MarianConfig,
    MarianMTModel,
    PreTrainedTokenizerBase,
    T5Config,
    T5ForConditionalGeneration,
)

from viz_transformer.testing.hf_tokenizers import (
    LINE_WORDS,
    LINES,
    bart_tokenizer,
    gpt2_tokenizer,
    llama_tokenizer,
    marian_tokenizer,
    t5_tokenizer,
    wordpiece,
)
from viz_transformer.testing.paper import WORDS

__all__ = ["BUILDERS", "LINES", "POSITIONS", "SHOWS", "TARGET", "TEXT", "seeded", "sharpen"]

TEXT = "the cat ran to the tree"
TARGET = "a bird sat on the mat"
MARIAN_VOCAB = 58_101  # Helsinki-NLP/opus-mt-en-de
BERT_VOCAB = 30_522  # bert-base-uncased
SEED = 0  # the tiny models' weights (a seed whose llama does not end its continuation early)

# parameters drawn wide by ``sharpen``: embeddings, queries, keys and T5's position bias
SHARPEN = ("embed", "shared", "wte", "wpe", "q_proj", "k_proj", "query", "key", "c_attn", ".q.",
           ".k.", "relative_attention_bias")  # fmt: skip


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Inside, torch's CPU generator starts from ``seed`` (a model's initialisation draws from
    it); on leaving, it is back where it was, so neither what ran before nor what runs after
    depends on the models built here."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def sharpen(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Draw embeddings, queries and keys wide (from a generator seeded ``seed``), in place, so the
    tiny models' maps are peaked and a mix-up of layers or heads would show; the rest keeps its
    small init, so the residual stream does not collapse.

    Returns:
        ``model``.
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(part in name for part in SHARPEN):
                p.normal_(0.0, 0.5, generator=generator)
    return model


def save_model(folder: Path, tokenizer: PreTrainedTokenizerBase, model: torch.nn.Module) -> Path:
    """Save ``model`` and ``tokenizer`` in ``folder`` (made if missing), to load as
    ``hf:<folder>``.

    Returns:
        ``folder``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def save_seeded(
    folder: Path,
    tokenizer: PreTrainedTokenizerBase,
    build: Callable[[], torch.nn.Module],
    seed: int = SEED,
    sharp: bool = True,
) -> Path:
    """Save ``build()`` (weights drawn after ``seed``, then ``sharpen`` unless not ``sharp``)
    with ``tokenizer`` in ``folder``.

    Returns:
        ``folder``.
    """
    with seeded(seed):
        model = build().eval()
    return save_model(folder, tokenizer, sharpen(model) if sharp else model)


def _both_sides(d_model: int, layers: int, heads: int, ffn: int, positions: int) -> dict:
    """An encoder-decoder's sizes, the same on both sides (Marian's and BART's config names)."""
    sides = {"layers": layers, "attention_heads": heads, "ffn_dim": ffn}
    return {
        "d_model": d_model,
        "max_position_embeddings": positions,
        **{f"{side}_{key}": n for side in ("encoder", "decoder") for key, n in sides.items()},
    }


def _marian_config(vocab: dict[str, int], **sizes: object) -> MarianConfig:
    pad = vocab["<pad>"]
    return MarianConfig(
        vocab_size=len(vocab),
        decoder_vocab_size=len(vocab),
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=0,
        **sizes,
    )


def _marian(path: Path) -> Path:
    path.mkdir(parents=True)
    tok, vocab = marian_tokenizer(path, LINES * 4, 60)
    cfg = _marian_config(vocab, **_both_sides(16, layers=2, heads=2, ffn=32, positions=64))
    return save_seeded(path / "model", tok, lambda: MarianMTModel(cfg))


def _t5(path: Path) -> Path:
    tok = t5_tokenizer()
    cfg = T5Config(
        vocab_size=len(tok),
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        relative_attention_num_buckets=8,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    return save_seeded(path, tok, lambda: T5ForConditionalGeneration(cfg))


def _bart(path: Path) -> Path:
    tok = bart_tokenizer()
    cfg = BartConfig(
        vocab_size=len(tok),
        **_both_sides(16, layers=2, heads=4, ffn=32, positions=64),
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_bos_token_id=0,
    )
    return save_seeded(path, tok, lambda: BartForConditionalGeneration(cfg))


def _bert(path: Path) -> Path:
    tok, tokens = wordpiece(LINE_WORDS)
    cfg = BertConfig(
        vocab_size=len(set(tokens)),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    return save_seeded(path, tok, lambda: BertModel(cfg))


def _gpt2(path: Path) -> Path:
    tok = gpt2_tokenizer()
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_embd=16,
        n_layer=2,
        n_head=2,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    return save_seeded(path, tok, lambda: GPT2LMHeadModel(cfg))


def _llama(path: Path) -> Path:
    tok = llama_tokenizer()
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=1,
        eos_token_id=2,
    )
    return save_seeded(path, tok, lambda: LlamaForCausalLM(cfg))


# the tiny model of each family: ``BUILDERS[family](folder)`` saves it (``save_seeded``: seeded,
# then ``sharpen``) and returns the folder to load as ``hf:<folder>``; Marian keeps its
# SentencePiece files in ``folder`` and the model in ``folder / "model"``
BUILDERS: dict[str, Callable[[Path], Path]] = {
    "marian": _marian,
    "t5": _t5,
    "bart": _bart,
    "bert": _bert,
    "gpt2": _gpt2,
    "llama": _llama,
}
ALL = ("encoder", "decoder", "cross")
SHOWS = {
    "marian": ALL,
    "t5": ALL,
    "bart": ALL,
    "bert": ("encoder",),
    "gpt2": ("decoder",),
    "llama": ("decoder",),
}
POSITIONS = {"marian": "sinusoidal", "t5": "relative", "bart": "learned", "bert": "learned",
             "gpt2": "learned", "llama": "rotary"}  # fmt: skip


def build_marian_base(folder: Path | str, seed: int = 0) -> Path:
    """A Marian the size of ``Helsinki-NLP/opus-mt-en-de`` (d_model 512, 6 + 6 layers, 8 heads,
    FFN 2048, 512 positions, ~74 M parameters) with random weights.

    Its SentencePiece model is trained on a few lines of ``WORDS`` (each word one piece); the
    vocabulary is padded to opus-mt-en-de's 58,101 entries so the embedding and output layer
    cost what they cost in the real model.

    Returns:
        ``folder``, ready for ``load_model(f"hf:{folder}")``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [" ".join(WORDS[i : i + 8]) for i in range(0, len(WORDS), 4)]
    tok, vocab = marian_tokenizer(folder, lines * 8, 200, MARIAN_VOCAB, num_threads=1)
    cfg = _marian_config(
        vocab,
        **_both_sides(512, layers=6, heads=8, ffn=2048, positions=512),
        activation_function="swish",
        scale_embedding=True,
    )
    return save_seeded(folder, tok, lambda: MarianMTModel(cfg), seed, sharp=False)


def build_bert_long(folder: Path | str, seed: int = 0, positions: int = 4096) -> Path:
    """A BERT encoder (d 384, 6 layers, 12 heads, intermediate 1536) reading ``positions``,
    random weights, with a WordPiece tokenizer whose words are ``WORDS`` (plus letters and ``##``
    letters, padded with ``[unused]`` entries to bert-base's 30,522).

    Returns:
        ``folder``, ready for ``load_model(f"hf:{folder}")``.
    """
    tok, tokens = wordpiece(list(dict.fromkeys(WORDS)), BERT_VOCAB, model_max_length=positions)
    cfg = BertConfig(
        vocab_size=len(tokens),
        hidden_size=384,
        num_hidden_layers=6,
        num_attention_heads=12,
        intermediate_size=1536,
        max_position_embeddings=positions,
    )
    return save_seeded(Path(folder), tok, lambda: BertModel(cfg), seed, sharp=False)
