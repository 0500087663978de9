"""2017 vs today: the paper's Transformer and a modern decoder-only LLM side by side, every line
read from the loaded models."""

from __future__ import annotations

from viz_transformer.ui import sidebar, then_and_now, widgets


def then_and_now_page() -> None:
    """The paper model, the built-in LLM and the sidebar's model, one column each."""
    name, _ = sidebar.draw()
    widgets.page_header(
        "2017 vs today",
        "The paper's Transformer (2017) next to SmolLM2 (2024), a small model built the way "
        "today's LLMs are. Every cell is read from the loaded model's modules and config; pick "
        "any model in the sidebar (an hf: one too) to add its column.",
    )
    then_and_now.draw(then_and_now.summaries(then_and_now.columns(name)))


then_and_now_page()
