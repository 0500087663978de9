"""Watch it learn: the paper Transformer trained from scratch while the class watches, with and
without 1/sqrt(d_k) (section 3.2.1), its attention redrawn every two seconds."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
from pages.sections.watch_it_learn import live_training
from viz_transformer.ui import caches, sidebar, widgets


def watch_it_learn_page() -> None:
    """Start (or watch) the server's one live run; the maps and curves grow as it trains."""
    sidebar.draw()
    widgets.page_header(
        table.title("watch_it_learn"),
        "Nobody writes the anti-diagonal: a small Transformer built as section 3 describes learns "
        "to reverse words from scratch, and its cross-attention finds the mirror order by itself. "
        "Beside it, the same model with the same seed without 1/√d_k: its softmax saturates and "
        "the maps stay blurred for longer.",
        r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V"
        r"\quad\text{vs.}\quad\mathrm{softmax}\!\left(QK^\top\right)V",
    )
    trainer = caches.live_trainer()
    live_training.controls(trainer)
    live_training.live_view(trainer)


watch_it_learn_page()
