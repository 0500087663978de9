"""Hugging Face models with random weights and real tokenizers, saved as folders that load as
``hf:<folder>``: six tiny families for tests (d_model 16 to 32, two layers), and two at benchmark
sizes (an opus-mt-en-de-size Marian, a 4,096-position BERT)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import sentencepiece as spm
import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BartTokenizer,
    BertConfig,
    BertModel,
    BertTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    GPT2Tokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    LlamaTokenizer,
    MarianConfig,
    MarianMTModel,
    MarianTokenizer,
    PreTrainedTokenizerBase,
    T5Config,
    T5ForConditionalGeneration,
    T5Tokenizer,
)
from transformers.convert_slow_tokenizer import bytes_to_unicode

from viz_transformer.testing.paper import WORDS, fillers

LINES = [
    "the cat sat on the mat",
    "the dog ran to the red house",
    "a small bird sings in the tree",
    "she reads the book and he writes a letter",
]
TEXT = "the cat ran to the tree"
TARGET = "a bird sat on the mat"
LINE_WORDS = sorted({w for line in LINES for w in line.split()})
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
MARIAN_VOCAB = 58_101  # Helsinki-NLP/opus-mt-en-de
BERT_VOCAB = 30_522  # bert-base-uncased

# parameters drawn wide by ``sharpen``: embeddings, queries, keys and T5's position bias
SHARPEN = ("embed", "shared", "wte", "wpe", "q_proj", "k_proj", "query", "key", "c_attn", ".q.",
           ".k.", "relative_attention_bias")  # fmt: skip


def sharpen(model: torch.nn.Module) -> torch.nn.Module:
    """Draw embeddings, queries and keys wide (seed 0), in place, so the tiny models' maps are
    peaked and a mix-up of layers or heads would show; the rest keeps its small init, so the
    residual stream does not collapse.

    Returns:
        ``model``.
    """
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(part in name for part in SHARPEN):
                p.normal_(0.0, 0.5)
    return model


def _save(path: Path, tokenizer: PreTrainedTokenizerBase, model: torch.nn.Module) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(path)
    model.save_pretrained(path)
    return path


def _byte_level_vocab(specials: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """GPT-2 style byte-level BPE: every byte symbol, plus a few merges that make Ġ-words."""
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "c"), ("a", "t"), ("Ġc", "at")]
    symbols = [*specials, *bytes_to_unicode().values(), *("".join(m) for m in merges)]
    return {s: i for i, s in enumerate(dict.fromkeys(symbols))}, merges


def _marian_tokenizer(
    folder: Path, lines: list[str], pieces: int, size: int | None = None, **train: object
) -> tuple[MarianTokenizer, dict[str, int]]:
    """A SentencePiece model of about ``pieces`` pieces trained on ``lines`` in ``folder`` and
    Marian's vocabulary around it: ``</s>`` = 0, ``<unk>`` = 1, ``<pad>`` last (the decoder
    start), padded with filler pieces to ``size`` entries when given.

    Returns:
        The tokenizer and its vocabulary (token -> id).
    """
    prefix = folder / "sp"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=str(prefix), vocab_size=pieces,
        hard_vocab_limit=False, bos_id=-1, eos_id=-1, unk_id=0, minloglevel=2, **train,
    )  # fmt: skip
    sp = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    head = ["</s>", "<unk>", *(sp.id_to_piece(i) for i in range(1, sp.get_piece_size()))]
    padding = fillers(size - len(head) - 1, set(head)) if size else []
    vocab = {t: i for i, t in enumerate([*head, *padding, "<pad>"])}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tok = MarianTokenizer(f"{prefix}.model", f"{prefix}.model", str(folder / "vocab.json"))
    return tok, vocab


def _marian_config(vocab: dict[str, int], **sizes: object) -> MarianConfig:
    pad = vocab["<pad>"]
    return MarianConfig(
        vocab_size=len(vocab), decoder_vocab_size=len(vocab), pad_token_id=pad, eos_token_id=0,
        decoder_start_token_id=pad, forced_eos_token_id=0, **sizes,
    )  # fmt: skip


def _wordpiece(
    words: list[str], size: int | None = None, **options: object
) -> tuple[BertTokenizer, list[str]]:
    """BERT's specials, ``words``, letters and ``##`` letters, padded with ``[unused]`` entries
    to ``size`` when given.

    Returns:
        The tokenizer and its token list (a word that is also a letter stands twice in the list
        and once, with the later id, in the vocabulary).
    """
    head = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *LETTERS,
            *(f"##{c}" for c in LETTERS)]  # fmt: skip
    tokens = head + [f"[unused{i}]" for i in range((size or len(head)) - len(head))]
    return BertTokenizer(vocab={t: i for i, t in enumerate(tokens)}, **options), tokens


def _marian(path: Path) -> Path:
    path.mkdir(parents=True)
    tok, vocab = _marian_tokenizer(path, LINES * 4, 60)
    cfg = _marian_config(
        vocab, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
        max_position_embeddings=64,
    )  # fmt: skip
    return _save(path / "model", tok, sharpen(MarianMTModel(cfg)))


def _t5(path: Path) -> Path:
    pieces = ["<pad>", "</s>", "<unk>", "▁", *(f"▁{w}" for w in LINE_WORDS), *LETTERS]
    tok = T5Tokenizer(vocab=[(p, -float(i)) for i, p in enumerate(pieces)], extra_ids=0)
    cfg = T5Config(
        vocab_size=len(pieces), d_model=16, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=2,
        num_heads=2, relative_attention_num_buckets=8, decoder_start_token_id=0, pad_token_id=0,
        eos_token_id=1,
    )  # fmt: skip
    return _save(path, tok, sharpen(T5ForConditionalGeneration(cfg)))


def _bart(path: Path) -> Path:
    vocab, merges = _byte_level_vocab(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = BartTokenizer(vocab=vocab, merges=merges)
    cfg = BartConfig(
        vocab_size=len(vocab), d_model=16, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=32,
        decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, decoder_start_token_id=2, forced_bos_token_id=0,
    )  # fmt: skip
    return _save(path, tok, sharpen(BartForConditionalGeneration(cfg)))


def _bert(path: Path) -> Path:
    tok, tokens = _wordpiece(LINE_WORDS)
    cfg = BertConfig(
        vocab_size=len(set(tokens)), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    return _save(path, tok, sharpen(BertModel(cfg)))


def _gpt2(path: Path) -> Path:
    vocab, merges = _byte_level_vocab(["<|endoftext|>"])
    tok = GPT2Tokenizer(vocab=vocab, merges=merges)
    cfg = GPT2Config(
        vocab_size=len(vocab), n_embd=16, n_layer=2, n_head=2, n_positions=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    return _save(path, tok, sharpen(GPT2LMHeadModel(cfg)))


def _llama(path: Path) -> Path:
    pieces = ["<unk>", "<s>", "</s>", "▁", *LETTERS, "▁t", "he", "▁the", "▁c", "at", "▁cat"]
    merges = [("▁", "t"), ("h", "e"), ("▁t", "he"), ("▁", "c"), ("a", "t"), ("▁c", "at")]
    tok = LlamaTokenizer(
        vocab={p: i for i, p in enumerate(pieces)}, merges=merges, add_bos_token=True
    )
    cfg = LlamaConfig(
        vocab_size=len(pieces), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return _save(path, tok, sharpen(LlamaForCausalLM(cfg)))


# the tiny model of each family: ``BUILDERS[family](folder)`` saves it (weights drawn from torch's
# global generator, then ``sharpen``) and returns the folder to load as ``hf:<folder>``; Marian
# keeps its SentencePiece files in ``folder`` and the model in ``folder / "model"``
BUILDERS: dict[str, Callable[[Path], Path]] = {
    "marian": _marian, "t5": _t5, "bart": _bart, "bert": _bert, "gpt2": _gpt2, "llama": _llama,
}  # fmt: skip
ALL = ("encoder", "decoder", "cross")
SHOWS = {"marian": ALL, "t5": ALL, "bart": ALL, "bert": ("encoder",), "gpt2": ("decoder",),
         "llama": ("decoder",)}  # fmt: skip
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
    tok, vocab = _marian_tokenizer(folder, lines * 8, 200, MARIAN_VOCAB, num_threads=1)
    cfg = _marian_config(
        vocab, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
        decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
        max_position_embeddings=512, activation_function="swish", scale_embedding=True,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _save(folder, tok, MarianMTModel(cfg).eval())


def build_bert_long(folder: Path | str, seed: int = 0, positions: int = 4096) -> Path:
    """A BERT encoder (d 384, 6 layers, 12 heads, intermediate 1536) reading ``positions``,
    random weights, with a WordPiece tokenizer whose words are ``WORDS`` (plus letters and ``##``
    letters, padded with ``[unused]`` entries to bert-base's 30,522).

    Returns:
        ``folder``, ready for ``load_model(f"hf:{folder}")``.
    """
    tok, tokens = _wordpiece(list(dict.fromkeys(WORDS)), BERT_VOCAB, model_max_length=positions)
    cfg = BertConfig(
        vocab_size=len(tokens), hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
        intermediate_size=1536, max_position_embeddings=positions,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _save(Path(folder), tok, BertModel(cfg).eval())
