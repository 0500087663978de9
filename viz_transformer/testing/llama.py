"""Random-weight Llama-class decoders saved as Hugging Face folders that load as ``hf:<folder>``
(issues 43, 46): ``LLAMA_3_8B`` is Meta's published configuration (32 layers, 32 query heads
sharing 8 key/value heads, d_model 4096, SwiGLU 14,336, RoPE theta 500,000, 128,256 tokens);
``TINY_LLAMA`` the same shape scaled down; ``STANDIN_LLAMA`` the CPU stand-in of the memory tests
(the real vocabulary and head size, 2 narrow layers); ``WIDE_LLAMA`` the stand-in of the per-layer
memory test (issue 53: Llama 3.2 1B's width, query and key/value heads, any number of layers). The
tokenizer is word-level over ``WORDS``
(one token per word, a ``<|begin_of_text|>`` in front), so a text of ``n - 1`` words is ``n``
tokens. The weights are drawn on the target device in the target dtype (an 8B model in float32
on the CPU first would take 32 GB and minutes). ``bench/harness/llama.py`` times them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from viz_transformer.testing.paper import WORDS

BOS, EOS, UNK = "<|begin_of_text|>", "<|end_of_text|>", "<unk>"
LLAMA_3_8B: dict[str, Any] = {  # meta-llama/Meta-Llama-3-8B config.json
    "vocab_size": 128_256, "hidden_size": 4096, "intermediate_size": 14_336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "rope_theta": 500_000.0, "rms_norm_eps": 1e-5, "hidden_act": "silu",
}  # fmt: skip
TINY_LLAMA: dict[str, Any] = {  # the same shape (4 query heads per key/value head), tiny
    **LLAMA_3_8B,
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 224,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
}
STANDIN_LLAMA: dict[str, Any] = {  # the CPU stand-in of the memory tests (issue 46): Llama 3's
    # vocabulary (so the output layer and its logits are the real width), its head size 128, 4
    # query heads per key/value head, RoPE theta; 2 layers of d_model 512 (4 query heads)
    **LLAMA_3_8B,
    "hidden_size": 512,
    "intermediate_size": 1792,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
}
WIDE_LLAMA: dict[str, Any] = {  # the per-layer memory stand-in (issue 53): a real width (2,048,
    # 16 query heads of 128 sharing 4 key/value heads, as Llama 3.2 1B), so that what a layer
    # keeps (q and k: 20 MiB at 4,096 tokens in bfloat16) stands out of the noise; a narrow MLP
    # and Llama 2's 32,000-token vocabulary keep an 8-layer model at 0.6 GB and a pass at seconds
    **LLAMA_3_8B,
    "vocab_size": 32_000,
    "hidden_size": 2048,
    "intermediate_size": 2048,
    "num_hidden_layers": 2,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
}
SIZES = {
    "llama-3-8b": LLAMA_3_8B,
    "tiny": TINY_LLAMA,
    "standin": STANDIN_LLAMA,
    "wide": WIDE_LLAMA,
}


def word_tokenizer(positions: int) -> PreTrainedTokenizerFast:
    """One token per word of ``WORDS``, ``<|begin_of_text|>`` first, as Llama 3 starts."""
    vocab = {tok: i for i, tok in enumerate([BOS, EOS, UNK, *dict.fromkeys(WORDS)])}
    core = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        model_max_length=positions,
    )


def build_llama(
    folder: Path | str,
    size: str = "llama-3-8b",
    positions: int = 32_768,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.bfloat16,
    seed: int = 0,
    layers: int | None = None,
) -> Path:
    """Save a random Llama of ``SIZES[size]`` reading ``positions`` tokens into ``folder``
    (config, safetensors, tokenizer) and return it, ready for ``load_model(f"hf:{folder}")``.

    Args:
        device, dtype: where and in what the weights are drawn (saved as they are).
        layers: decoder layers instead of the size's own.
    """
    folder = Path(folder)
    shape = {**SIZES[size], **({} if layers is None else {"num_hidden_layers": layers})}
    config = LlamaConfig(
        **shape,
        max_position_embeddings=positions,
        bos_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(seed)
        model = LlamaForCausalLM._from_config(config, dtype=dtype).eval()
    folder.mkdir(parents=True, exist_ok=True)
    word_tokenizer(positions).save_pretrained(folder)
    model.save_pretrained(folder)
    del model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return folder
