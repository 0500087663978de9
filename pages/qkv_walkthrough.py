"""Q, K, V walkthrough: one token through one head of one layer, each step of Eq. 1 in numbers."""

import math

import streamlit as st

from viz_transformer import ui
from viz_transformer.analysis import walkthrough
from viz_transformer.figures import qkv as figures
from viz_transformer.records.kinds import KIND_TITLES


@st.cache_data(max_entries=16, show_spinner="Capturing q, k and v…")
def cached_capture(name: str, text: str, kind: str) -> walkthrough.KindCapture:
    return walkthrough.capture(ui.cached_model(name), text, kind)


name, text = ui.sidebar()
ui.page_header(
    "Q, K, V walkthrough",
    "Follow one token through one attention head on the model's real numbers: its query meets "
    "every key, the scores become weights, the weights mix the values, and W^O joins the heads.",
    r"\begin{gathered}\mathrm{MultiHead}(Q,K,V)=\mathrm{Concat}(\mathrm{head}_1,\dots,"
    r"\mathrm{head}_h)W^O\\ \mathrm{head}_i=\mathrm{Attention}(QW_i^Q,KW_i^K,VW_i^V)\end{gathered}",
)
if ui.cached_spec(name).family == "hf":
    st.info(walkthrough.HF_NOTE)
    st.stop()
trace = ui.trace_or_stop(name, text)
st.markdown(f"**Output:** {ui.literal(trace.output_text)}")
for missing, why in trace.notes.items():
    st.info(f"No {KIND_TITLES[missing].lower()} walkthrough: {why}")
kinds = [k for k in KIND_TITLES if trace.get(k) is not None]
if st.session_state.get("kind") not in kinds:
    st.session_state["kind"] = kinds[0]
kind = st.radio("Attention kind", kinds, format_func=KIND_TITLES.get, horizontal=True, key="kind")
try:
    cap = cached_capture(name, text, kind)
except (ValueError, RuntimeError) as exc:
    ui.show_error(exc)
    st.stop()

tokens = cap.query_tokens
if st.session_state.get("token") not in range(len(tokens)):
    st.session_state["token"] = min(1, len(tokens) - 1)  # the second token: the first is often <s>
ui.clamp_state("layer", cap.n_layers)
ui.clamp_state("head", cap.n_heads)
col_token, col_layer, col_head = st.columns(3)
# a decoder position's query works for the next output token: name it beside the input
preds = trace.pred_tokens if kind != "encoder" and len(trace.pred_tokens) == len(tokens) else ()
position = col_token.selectbox(
    "Query token",
    range(len(tokens)),
    format_func=lambda i: f"{i}: {tokens[i]}" + (f" (predicts {preds[i]})" if preds else ""),
    key="token",
)
layer = col_layer.selectbox("Layer", range(cap.n_layers), key="layer")
head = col_head.selectbox("Head", range(cap.n_heads), key="head")
w = walkthrough.explain(cap, layer, head, position)

source = "m_j" if kind == "cross" else "x_j"  # cross-attention: keys from the encoder output m
if w.embed is not None:
    start = r"x_i=\sqrt{d_{model}}\,E_{t_i}+PE_i"
elif kind == "cross":
    start = r"x_i=\text{decoder stream after its first sub-layer};\ m_j=\text{encoder output}"
else:
    start = rf"x_i=\text{{output of layer {layer - 1}, the residual stream entering layer {layer}}}"
scores = r"s_{ij}=q_i\cdot k_j=\sum_{c=1}^{d_k}q_{ic}k_{jc},\quad \tilde s_{ij}="
scores += (
    rf"\frac{{s_{{ij}}}}{{\sqrt{{d_k}}}}=\frac{{s_{{ij}}}}{{{math.sqrt(w.d_k):.3f}}}"
    if w.divided
    else "s_{ij}"
)
scores += r",\quad a_{ij}=\frac{e^{\tilde s_{ij}}}{\sum_{j'}e^{\tilde s_{ij'}}}"
scores += r",\ \tilde s_{ij}=-\infty\ (j>i)\Rightarrow a_{ij}=0" if kind == "decoder" else ""
proj = rf"q_i=x_iW^Q_{{{head}}}+b^Q_{{{head}}},\ "
proj += rf"k_j={source}W^K_{{{head}}}+b^K_{{{head}}},\ v_j={source}W^V_{{{head}}}+b^V_{{{head}}}"
steps = [
    (start, figures.input_figure(w), "input"),
    (proj, figures.vectors_figure(w), "qkv"),
    (scores, figures.scores_table(w), "scores"),
    (r"z_i=\sum_j a_{ij}\,v_j", figures.weighted_sum_figure(w), "weighted-sum"),
    (r"\mathrm{MultiHead}_i=\mathrm{Concat}(z_i^{(0)},\dots,z_i^{(h-1)})\,W^O+b^O",
     figures.output_figure(w), "output"),
]  # fmt: skip
stem = f"qkv-{kind}-L{layer}-H{head}-t{position}"
for equation, fig, part in steps:
    st.latex(equation)
    ui.chart(fig, f"{stem}-{part}", key=part)
st.caption(
    f"d_k = {w.d_k}. The paper writes the projections without biases; these implementations "
    "add them. The output then joins the residual: LayerNorm(x + output) (post-norm, 3.1)."
)
ui.downloads(stem, w.arrays(), w.meta())
