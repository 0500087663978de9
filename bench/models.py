"""Random benchmark models built offline, at the sizes issue 5 names, with real tokenizers.

- ``build_marian_base(folder)``: a Marian encoder-decoder the size of ``Helsinki-NLP/opus-mt-en-de``
  (d_model 512, 6+6 layers, 8 heads, FFN 2048, 58,101 tokens, 512 positions, ~74 M parameters),
  saved as a Hugging Face folder with a SentencePiece ``MarianTokenizer``; load it as
  ``hf:<folder>``.
- ``build_bert_long(folder)``: a BERT encoder (d 384, 6 layers, 12 heads, intermediate 1536,
  4,096 positions, 30,522 tokens) saved the same way with a WordPiece ``BertTokenizer``.
- ``paper_model(...)``: the paper's Transformer (``viz_transformer.networks.paper``) with random
  weights at the base size, wrapped in ``PaperModel`` with a word vocabulary (for ``vt.trace``).
- ``text_of(count, n)``: a text of exactly ``n`` tokens by a model's own count.

Weights are random (seeded): these models are for timing and memory, not for reading attention.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import sentencepiece as spm
import torch

from viz_transformer.models.base import ModelSpec
from viz_transformer.models.paper import PaperModel
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.text.vocab import WordVocab

WORDS = (
    "the", "cat", "sat", "on", "mat", "dog", "ran", "to", "red", "house", "a", "small", "bird",
    "sings", "in", "tree", "she", "reads", "book", "and", "he", "writes", "letter", "we", "walk",
    "by", "river", "every", "morning", "old", "man", "sells", "fresh", "bread", "at", "market",
    "children", "play", "near", "school", "after", "rain", "stops", "green", "hills", "stand",
    "behind", "village", "my", "friend", "found", "key", "under", "table",
)  # fmt: skip
LINES = [" ".join(WORDS[i : i + 8]) for i in range(0, len(WORDS), 4)]
MARIAN_VOCAB = 58_101  # Helsinki-NLP/opus-mt-en-de
BERT_VOCAB = 30_522  # bert-base-uncased
PAPER_VOCAB = 37_000  # the paper's shared English-German BPE vocabulary (section 5.1)


def _fillers(n: int, exclude: set[str]) -> list[str]:
    """``n`` distinct lower-case letter strings not in ``exclude``, to pad a vocabulary to size
    (letters only: the paper vocabulary splits digits into tokens of their own)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    combos = ("".join(c) for k in itertools.count(3) for c in itertools.product(letters, repeat=k))
    return list(itertools.islice((w for w in combos if w not in exclude), n))


def _save(folder: Path, tokenizer: object, model: torch.nn.Module) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def build_marian_base(folder: Path | str, seed: int = 0) -> Path:
    """An opus-mt-en-de-size Marian with random weights and a real SentencePiece tokenizer.

    The SentencePiece model is trained on a few lines of ``WORDS`` (each word one piece); the
    vocabulary is padded with filler pieces to opus-mt-en-de's 58,101 entries so the embedding
    and output layer cost what they cost in the real model. Marian's layout: ``</s>`` = 0,
    ``<unk>`` = 1, ``<pad>`` last and the decoder start.

    Returns:
        ``folder``, ready for ``load_model(f"hf:{folder}")``.
    """
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    prefix = folder / "sp"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES * 8), model_prefix=str(prefix), vocab_size=200,
        hard_vocab_limit=False, bos_id=-1, eos_id=-1, unk_id=0, minloglevel=2, num_threads=1,
    )  # fmt: skip
    sp = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    pieces = [sp.id_to_piece(i) for i in range(1, sp.get_piece_size())]
    head = ["</s>", "<unk>", *pieces]
    tokens = [*head, *_fillers(MARIAN_VOCAB - len(head) - 1, set(head)), "<pad>"]
    vocab = {t: i for i, t in enumerate(tokens)}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tok = MarianTokenizer(f"{prefix}.model", f"{prefix}.model", str(folder / "vocab.json"))
    pad = vocab["<pad>"]
    cfg = MarianConfig(
        vocab_size=len(vocab), decoder_vocab_size=len(vocab), d_model=512, encoder_layers=6,
        decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
        encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512,
        activation_function="swish", scale_embedding=True, pad_token_id=pad, eos_token_id=0,
        decoder_start_token_id=pad, forced_eos_token_id=0,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _save(folder, tok, MarianMTModel(cfg).eval())


def build_bert_long(folder: Path | str, seed: int = 0) -> Path:
    """A BERT encoder (d 384, 6 layers, 12 heads, intermediate 1536) reading 4,096 positions,
    random weights, with a WordPiece tokenizer whose words are ``WORDS`` (plus letters and
    ``##`` letters, padded with ``[unused]`` entries to bert-base's 30,522)."""
    from transformers import BertConfig, BertModel, BertTokenizer

    folder = Path(folder)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    head = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS), *letters,
            *(f"##{c}" for c in letters)]  # fmt: skip
    tokens = head + [f"[unused{i}]" for i in range(BERT_VOCAB - len(head))]
    tok = BertTokenizer(vocab={t: i for i, t in enumerate(tokens)}, model_max_length=4096)
    cfg = BertConfig(
        vocab_size=len(tokens), hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
        intermediate_size=1536, max_position_embeddings=4096,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _save(folder, tok, BertModel(cfg).eval())


def paper_model(
    d_model: int = 512,
    n_heads: int = 8,
    n_layers: int = 6,
    d_ff: int = 2048,
    vocab_size: int = PAPER_VOCAB,
    max_len: int = 1024,
    device: str | torch.device = "cpu",
    seed: int = 0,
) -> PaperModel:
    """The paper's Transformer (section 3, base size by default) with random weights, wrapped as
    the app wraps a shipped paper model, so ``vt.trace(model, text, target=...)`` works.

    Its word vocabulary holds ``WORDS`` padded with letter-only fillers to ``vocab_size``;
    ``model.module`` is the bare ``Transformer`` for plain forward passes.
    """
    words = list(dict.fromkeys(WORDS))
    vocab = WordVocab.build(words + _fillers(vocab_size - 4 - len(words), set(words)))
    cfg = TransformerConfig(
        vocab_size=len(vocab), d_model=d_model, n_heads=n_heads, n_encoder_layers=n_layers,
        n_decoder_layers=n_layers, d_ff=d_ff, dropout=0.0, max_len=max_len,
    )  # fmt: skip
    torch.manual_seed(seed)
    dev = torch.device(device)
    module = Transformer(cfg).to(dev).eval()
    spec = ModelSpec(
        name=f"paper-random-{d_model}x{n_layers}", family="paper",
        description="random paper Transformer for benchmarks", example="the cat sat on the mat",
        shows=("encoder", "decoder", "cross"), positions="sinusoidal", path=Path("."),
    )  # fmt: skip
    return PaperModel(spec, dev, module, vocab)


def text_of(count: Callable[[str], int], n: int, words: tuple[str, ...] = WORDS) -> str:
    """A text of exactly ``n`` tokens as ``count`` (text -> token count, special tokens included)
    counts them, made of the ``words`` that are a single token each, cycled.

    Raises:
        ValueError: ``n`` is below the special tokens' count, or the count comes out otherwise.
    """
    single = [w for w in words if count(f"{w} {w}") - count(w) == 1]
    if not single:
        raise ValueError("no word of the list is a single token for this tokenizer.")
    specials = count(single[0]) - 1
    if n <= specials:
        raise ValueError(f"{n} tokens leave no room for a word after {specials} special tokens.")
    text = " ".join(itertools.islice(itertools.cycle(single), n - specials))
    if (got := count(text)) != n:
        raise ValueError(f"the text came out as {got} tokens, not {n}.")
    return text
