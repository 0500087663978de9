"""Home warmed before anyone opens it: the default model loaded, its example traced, Home's three
maps drawn into the page's own caches, while the server already listens (``python -m
viz_transformer app``, which runs ``warm_home`` in a thread as Streamlit starts). A teacher who
opens Home seconds after starting the server finds the maps ready, or waits only for the rest.
"""

from __future__ import annotations

import time


def warm_home(model: str | None = None) -> float:
    """Load ``model`` (default: the app's), trace its example sentence (the sidebar's sentence
    until a user types another) and put Home's maps in the page's caches, argument for argument
    as Home asks for them; returns the seconds it took.

    The library and the figures come first and ``caches`` (which imports the app's ui) last, so a
    page opened meanwhile still shows app.py's "Starting" note, and no longer needs to once the
    maps are ready."""
    start = time.monotonic()
    from viz_transformer import available_models, default_model, load_model, model_info, trace
    from viz_transformer.figures.attention import head_figure

    name = model or default_model()
    text = model_info(name).example
    tr = trace(load_model(name), text)
    available_models()  # the sidebar's picker imports the Hugging Face family for this
    for kind in tr.kinds:  # plotly's first figure loads its validators
        head_figure(tr, kind, tr.get(kind).shape[0] - 1, 0).to_json()
    from viz_transformer.ui import caches

    for kind in tr.kinds:
        layer = caches.trace(name, text).get(kind).shape[0] - 1
        caches.head_figure(name, text, kind, layer, 0, False, None)
    return time.monotonic() - start
