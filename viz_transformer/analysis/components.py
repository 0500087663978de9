"""What the pre-norm residual stream is made of: at any block, the sum of what wrote it (the
embeddings, each earlier head's output, each attention output bias, each MLP's output), read from
the walkthrough's ``KindCapture``. The component split of a score (``why``) and a head's writes
(``writes``) take their parts from here; the scores themselves are ``why``'s.
"""

from __future__ import annotations

import numpy as np

from viz_transformer.records.kinds import head_label
from viz_transformer.records.qkv import KindCapture, rows_of


def residual_components(
    cap: KindCapture, layer: int, positions: list[int]
) -> tuple[list[str], np.ndarray]:
    """The pre-norm residual stream entering block ``layer`` (``layer == n_layers``: the last
    block's output, ``cap.final``) at ``positions``, as the sum of what wrote it: the embeddings,
    each earlier head's output ``z_h W^O_h``, each attention output bias, each MLP's output (the
    stream's change across a block less its attention output).

    Returns:
        the components' names and ``[C, len(positions), d]`` float64 summing to the stream.

    Raises:
        ValueError: a post-norm model (its stream is renormalised after every sub-layer, so no
            such sum exists), or one whose heads' outputs were not recorded.
    """
    if cap.resid is None or cap.kind == "cross":
        raise ValueError(
            f"{cap.model_name} is post-norm: LayerNorm(x + Sublayer(x)) (section 3.1) rescales "
            "the stream after every sub-layer, so a layer's input is not a sum of earlier "
            "outputs and the component split is not available. Pre-norm models (smollm2, GPT-2, "
            "Llama) have it; at layer 0 split by input."
        )
    if "z" not in cap.captured or (layer == cap.n_layers and cap.final is None):
        raise ValueError(f"{cap.model_name}: its heads' outputs were not recorded in this run.")
    # the streams at ``positions`` (a capture may keep no others), one layer's W^O at a time
    streams = {i: rows_of(cap.resid, i, positions) for i in range(min(layer + 1, cap.n_layers))}
    if layer == cap.n_layers:
        streams[layer] = np.asarray(cap.final)[positions]
    names, parts = ["embeddings"], [streams[0].astype(np.float64)]
    n_heads, d_k = cap.n_heads, cap.d_k
    for lay in range(layer):
        z = rows_of(cap.captured["z"], lay, positions).astype(np.float64)  # (H, P, d_k)
        w_o = cap.weights["w_o"][lay].astype(np.float64).reshape(n_heads, d_k, -1)
        heads = np.einsum("hpk,hkd->hpd", z, w_o)  # (H, P, d)
        b_o = cap.weights["b_o"][lay].astype(np.float64)
        names += [head_label((lay, h)) for h in range(n_heads)]
        parts += list(heads)
        if b_o.any():
            names.append(f"L{lay} attention bias")
            parts.append(np.broadcast_to(b_o, heads.shape[1:]))
        change = (streams[lay + 1] - streams[lay]).astype(np.float64)
        names.append(f"L{lay} MLP")
        parts.append(change - heads.sum(0) - b_o)
    return names, np.stack(parts)
