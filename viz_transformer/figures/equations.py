"""LaTeX of each step of the Q, K, V walkthrough, with this head's numbers (Eq. 1, section 3.2.2).

One equation per figure of ``figures.qkv``: the input, the projections, the scores and softmax,
the weighted sum, and the output projection.
"""

from __future__ import annotations

import math

from viz_transformer.analysis.walkthrough import Walkthrough


def _input(w: Walkthrough) -> str:
    """Where the query's layer input comes from: embeddings at layer 0, else the stream; a
    pre-norm model's block input r_i normalised first (RMSNorm with gain g, or LayerNorm with
    gain g and bias b)."""
    stream = r",\quad r_i=\text{residual stream entering the block}"
    if w.normed is not None and w.norm == "layer":
        return (
            r"x_i=\mathrm{LayerNorm}(r_i)=\frac{r_i-\mu_i}{\sqrt{\sigma_i^2+\epsilon}}\odot g+b,"
            r"\ \mu_i=\tfrac{1}{d}\sum_c r_{ic},\ \sigma_i^2=\tfrac{1}{d}\sum_c(r_{ic}-\mu_i)^2"
            + stream
        )
    if w.normed is not None:
        return (
            r"x_i=\mathrm{RMSNorm}(r_i)=\frac{r_i}{\sqrt{\tfrac{1}{d}\sum_c r_{ic}^2+\epsilon}}"
            r"\odot g" + stream
        )
    if w.embed is not None:
        return r"x_i=\sqrt{d_{model}}\,E_{t_i}+PE_i"
    if w.kind == "cross":
        return r"x_i=\text{decoder stream after its first sub-layer};\ m_j=\text{encoder output}"
    layer = w.layer
    if layer == 0:  # a model whose embedding parts we do not take apart (BERT: + its LayerNorm)
        return r"x_i=\text{the embedding layer's output, the residual stream entering layer 0}"
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


def _projections(w: Walkthrough, biased: bool) -> str:
    """q, k, v of this head: biases where the model has them, the shared K/V head of grouped-query
    attention, and RoPE's rotation R of q and k by their positions where the model rotates."""
    h, g = w.head, w.head if w.kv_head is None else w.kv_head
    source = "m_j" if w.kind == "cross" else "x_j"  # cross-attention: keys from the encoder m

    def term(x: str, p: str, head: int) -> str:
        return rf"{x}W^{p}_{{{head}}}" + (rf"+b^{p}_{{{head}}}" if biased else "")

    q, k = term("x_i", "Q", h), term(source, "K", g)
    if w.q_plain is not None:
        q, k = rf"R_{{\Theta,i}}({q})", rf"R_{{\Theta,j}}({k})"
    return rf"q_i={q},\ k_j={k},\ v_j={term(source, 'V', g)}"


def walkthrough_equations(w: Walkthrough, biased: bool = True) -> list[str]:
    """The five equations of ``w``'s steps, in the order of ``figures.qkv``'s figures.

    Args:
        w: one query position through one head.
        biased: whether the model's projections add biases (the paper's Eq. 1 has none; most
            implementations add them, Llama does not).

    Returns:
        LaTeX for: the input x_i, the projections q_i, k_j, v_j, the scores and weights a_ij,
        the weighted sum z_i, and the output projection through W^O.
    """
    return [
        _input(w),
        _projections(w, biased),
        _scores(w),
        r"z_i=\sum_j a_{ij}\,v_j",
        r"\mathrm{MultiHead}_i=\mathrm{Concat}(z_i^{(0)},\dots,z_i^{(h-1)})\,W^O"
        + ("+b^O" if biased else ""),
    ]
