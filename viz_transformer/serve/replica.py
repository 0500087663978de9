"""One app process: load the default model, then become ``streamlit run app.py`` in this process.

``python -m viz_transformer.serve.replica [--background] APP [STREAMLIT FLAGS]``. By default the
model is loaded (and traced once, which warms torch's first-call paths) *before* Streamlit
listens, so a replica's ``/_stcore/health`` answers only when no student would wait for the load
(``serve``, the Docker image). With ``--background`` (``python -m viz_transformer app``, the
README's command) Streamlit listens at once and a thread warms the same things meanwhile, and
Home's three maps too (``viz_transformer.ui.warm``): a teacher who opens Home seconds after
starting finds them ready, or waits only for what is left. Either way the app's
``caches.model`` then finds the handle in ``registry.load_model``'s process-wide cache.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import runpy
import sys
import threading
import time

WARM = "viz_transformer.ui.warm"  # warm_home: the model and Home's maps in the page's caches


def preload(name: str) -> float:
    """Load ``name``, trace its example sentence once and list the models (the sidebar's picker
    imports the Hugging Face family for that: about a second the first session would pay);
    returns the seconds it took."""
    from viz_transformer import available_models, load_model, model_info, trace

    start = time.monotonic()
    trace(load_model(name), model_info(name).example)
    available_models()
    return time.monotonic() - start


def _warm_in_background(model: str | None) -> None:
    """``WARM``'s ``warm_home(model)`` in a thread: the app's own code, named as app.py is (a
    supervisor imports no page code)."""

    def run() -> None:
        try:
            seconds = importlib.import_module(WARM).warm_home(model)
            print(f"app: the model and Home warmed in {seconds:.1f} s", flush=True)
        except Exception as exc:  # the first page then loads it and says why
            print(f"app: warming failed ({exc}); the first page loads the model", flush=True)
        gc.freeze()

    threading.Thread(target=run, name="vt-warm", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    """Preload (or start warming, ``--background``), then hand the process to Streamlit's own
    command line (``streamlit run``)."""
    parser = argparse.ArgumentParser(prog="python -m viz_transformer.serve.replica")
    parser.add_argument("--model", default=None, help="model to preload (default: the app's)")
    parser.add_argument(
        "--background",
        action="store_true",
        help="listen at once and warm the model and Home meanwhile",
    )
    parser.add_argument("app", help="the Streamlit script (app.py)")
    args, streamlit_flags = parser.parse_known_args(argv)
    if args.background:
        _warm_in_background(args.model)
    else:
        from viz_transformer import default_model

        name = args.model or default_model()
        print(f"replica: {name} loaded in {preload(name):.1f} s; starting Streamlit", flush=True)
        # what is loaded now (torch, transformers, the model) lives as long as the process: out
        # of the collector's sight, so its full collections stop rescanning millions of objects
        gc.freeze()
    # runpy rather than an import: this module only starts the `streamlit` command, as
    # `python -m streamlit run` would, in the process that holds the loaded model
    sys.argv = ["streamlit", "run", args.app, *streamlit_flags]
    runpy.run_module("streamlit", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
