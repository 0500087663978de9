"""Q, K, V walkthrough: one token through one head of one layer, each step of Eq. 1 in numbers."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import streamlit as st

from pages.sections.qkv_walkthrough import notes as qkv_notes
from pages.sections.qkv_walkthrough import pickers as qkv_pickers
from pages.sections.qkv_walkthrough import why as why_section
from viz_transformer.analysis import walkthrough
from viz_transformer.figures import qkv as figures
from viz_transformer.figures.equations import walkthrough_equations
from viz_transformer.ui import caches, choice, input_notes, sidebar, switch, widgets
from viz_transformer.ui.retrieval_view import run_text

# figure of each step, beside its equation; the part names the PNG and keys the chart
STEPS = (
    (figures.input_figure, "input"),
    (figures.vectors_figure, "qkv"),
    (figures.scores_table, "scores"),
    (figures.weighted_sum_figure, "weighted-sum"),
    (figures.output_figure, "output"),
)


def qkv_walkthrough_page() -> None:
    """Capture q, k and v of the sentence and follow the chosen token through the chosen head."""
    name, text = sidebar.draw()
    widgets.page_header(
        table.title("qkv_walkthrough"),
        "Follow one token through one attention head on the model's real numbers: its query "
        "meets every key, the scores become weights, the weights mix the values, and W^O joins "
        "the heads.",
        r"\begin{gathered}\mathrm{MultiHead}(Q,K,V)=\mathrm{Concat}(\mathrm{head}_1,\dots,"
        r"\mathrm{head}_h)W^O\\ \mathrm{head}_i=\mathrm{Attention}(QW_i^Q,KW_i^K,VW_i^V)"
        r"\end{gathered}",
    )
    text = run_text(name, text, why_section.ANCHOR)  # a retrieval head's link: its run, at the copy
    trace = widgets.or_stop(caches.trace, name, text)
    input_notes.output_line(trace, text)
    notes = st.container()  # filled once the model is known to have a walkthrough
    kind = choice.kind_picker(trace)
    # a decoder position's query works for the next output token: name it beside the input
    preds = trace.pred_tokens if kind != "encoder" else ()
    position, layer, head, cap = qkv_pickers.pickers(name, text, kind, preds)
    if not widgets.presenting():  # in presenter mode below the figures: a chart shows first
        with notes:
            switch.show_missing(trace, "walkthrough")
    w = walkthrough.explain(cap, layer, head, position)
    stem = f"qkv-{kind}-L{layer}-H{head}-t{position}"
    for equation, (figure, part) in zip(walkthrough_equations(w, cap.biased), STEPS, strict=True):
        st.latex(equation)
        widgets.chart(figure(w), f"{stem}-{part}", key=part)
    st.caption(qkv_notes.caption(name, cap, w))
    widgets.downloads(stem, w.arrays(), w.meta())
    why_section.section(name, text, cap, layer, head, position)
    if widgets.presenting():
        switch.show_missing(trace, "walkthrough")


qkv_walkthrough_page()
