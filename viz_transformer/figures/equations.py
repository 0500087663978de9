"""LaTeX of each step of the Q, K, V walkthrough, with this head's numbers (Eq. 1, section 3.2.2).

One equation per figure of ``figures.qkv``: the input, the projections, the scores and softmax,
the weighted sum, and the output projection.
"""

from __future__ import annotations

import math

from viz_transformer.analysis.walkthrough import Walkthrough


def _input(w: Walkthrough) -> str:
    """Where the query's layer input comes from: embeddings at layer 0, else the stream."""
    if w.embed is not None:
        return r"x_i=\sqrt{d_{model}}\,E_{t_i}+PE_i"
    if w.kind == "cross":
        return r"x_i=\text{decoder stream after its first sub-layer};\ m_j=\text{encoder output}"
    layer = w.layer
    return rf"x_i=\text{{output of layer {layer - 1}, the residual stream entering layer {layer}}}"


def _scores(w: Walkthrough) -> str:
    """Dot products, the 1/sqrt(d_k) scale when the model divides, softmax, and the mask."""
    scores = r"s_{ij}=q_i\cdot k_j=\sum_{c=1}^{d_k}q_{ic}k_{jc},\quad \tilde s_{ij}="
    if w.divided:
        scores += rf"\frac{{s_{{ij}}}}{{\sqrt{{d_k}}}}=\frac{{s_{{ij}}}}{{{math.sqrt(w.d_k):.3f}}}"
    else:
        scores += "s_{ij}"
    scores += r",\quad a_{ij}=\frac{e^{\tilde s_{ij}}}{\sum_{j'}e^{\tilde s_{ij'}}}"
    if w.kind == "decoder":
        scores += r",\ \tilde s_{ij}=-\infty\ (j>i)\Rightarrow a_{ij}=0"
    return scores


def walkthrough_equations(w: Walkthrough) -> list[str]:
    """The five equations of ``w``'s steps, in the order of ``figures.qkv``'s figures.

    Args:
        w: one query position through one head.

    Returns:
        LaTeX for: the input x_i, the projections q_i, k_j, v_j, the scores and weights a_ij,
        the weighted sum z_i, and the output projection through W^O.
    """
    h = w.head
    source = "m_j" if w.kind == "cross" else "x_j"  # cross-attention: keys from the encoder m
    proj = rf"q_i=x_iW^Q_{{{h}}}+b^Q_{{{h}}},\ "
    proj += rf"k_j={source}W^K_{{{h}}}+b^K_{{{h}}},\ v_j={source}W^V_{{{h}}}+b^V_{{{h}}}"
    return [
        _input(w),
        proj,
        _scores(w),
        r"z_i=\sum_j a_{ij}\,v_j",
        r"\mathrm{MultiHead}_i=\mathrm{Concat}(z_i^{(0)},\dots,z_i^{(h-1)})\,W^O+b^O",
    ]
