"""One replica: load the default model, then become ``streamlit run app.py`` in this process.

``python -m viz_transformer.serve.replica --port P APP [STREAMLIT FLAGS]``. The model is loaded
(and traced once, which warms torch's first-call paths) *before* Streamlit listens, so the
replica's ``/_stcore/health`` answers only when no student would wait for the load; the app's
``caches.model`` then finds the handle in ``registry.load_model``'s process-wide cache.
"""

from __future__ import annotations

import argparse
import gc
import runpy
import sys
import time

from viz_transformer import available_models, default_model, load_model, model_info, trace


def preload(name: str) -> float:
    """Load ``name``, trace its example sentence once and list the models (the sidebar's picker
    imports the Hugging Face family for that: about a second the first session would pay);
    returns the seconds it took."""
    start = time.monotonic()
    trace(load_model(name), model_info(name).example)
    available_models()
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> None:
    """Preload, then hand the process to Streamlit's own command line (``streamlit run``)."""
    parser = argparse.ArgumentParser(prog="python -m viz_transformer.serve.replica")
    parser.add_argument("--model", default=None, help="model to preload (default: the app's)")
    parser.add_argument("app", help="the Streamlit script (app.py)")
    args, streamlit_flags = parser.parse_known_args(argv)
    name = args.model or default_model()
    print(f"replica: {name} loaded in {preload(name):.1f} s; starting Streamlit", flush=True)
    # what is loaded now (torch, transformers, the model) lives as long as the process: out of
    # the collector's sight, so its full collections stop rescanning millions of objects
    gc.freeze()
    # runpy rather than an import: this module only starts the `streamlit` command, as
    # `python -m streamlit run` would, in the process that holds the loaded model
    sys.argv = ["streamlit", "run", args.app, *streamlit_flags]
    runpy.run_module("streamlit", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
