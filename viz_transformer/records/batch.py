"""``PatternBatch``: the attention of several inputs at once, padded to common lengths.

What a model's batched capture returns and the corpus statistics read: one array per kind with the
batch dimension kept, and each input's own query and key counts, so nobody reads padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from viz_transformer.records.kinds import KINDS, AttentionKind
from viz_transformer.records.trace import Trace


@dataclass(frozen=True)
class PatternBatch:
    """Attention weights of B inputs, CPU float32 numpy.

    Attributes:
        patterns: kind -> ``[layers, B, heads, q, k]``; input b's pattern is
            ``patterns[kind][:, b, :, :q_lens[kind][b], :k_lens[kind][b]]``, equal to what
            ``vt.trace`` of that input alone records; entries outside it are undefined.
        q_lens: kind -> ``(B,)`` query rows of each input (decoder kinds: ``<s>`` + its output).
        k_lens: kind -> ``(B,)`` keys of each input.
    """

    patterns: dict[AttentionKind, np.ndarray]
    q_lens: dict[AttentionKind, np.ndarray]
    k_lens: dict[AttentionKind, np.ndarray]

    @property
    def size(self) -> int:
        """B, the number of inputs."""
        return len(next(iter(self.q_lens.values()))) if self.q_lens else 0

    @classmethod
    def from_traces(cls, traces: Sequence[Trace]) -> PatternBatch:
        """Pad the traces' arrays into one batch (the generic path: one trace per input).

        Only kinds every trace has a map for are kept (a recurrent decoder has no map).
        """
        kinds = [k for k in KINDS if all(t.get(k) is not None for t in traces)]
        patterns, q_lens, k_lens = {}, {}, {}
        for kind in kinds:
            arrays = [np.asarray(t.get(kind), dtype=np.float32) for t in traces]
            qs = np.array([a.shape[2] for a in arrays], dtype=np.int64)
            ks = np.array([a.shape[3] for a in arrays], dtype=np.int64)
            layers, heads = arrays[0].shape[:2]
            out = np.zeros((layers, len(arrays), heads, qs.max(), ks.max()), np.float32)
            for b, a in enumerate(arrays):
                out[:, b, :, : a.shape[2], : a.shape[3]] = a
            patterns[kind], q_lens[kind], k_lens[kind] = out, qs, ks
        return cls(patterns, q_lens, k_lens)
