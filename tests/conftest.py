"""What every tier shares: one torch thread (2 shared cores), offline, a tiny random paper model,
and bit-for-bit trace equality. Random models come from ``viz_transformer.testing``."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# live runs save checkpoints, and converted models and corpus statistics are cached: into
# temporary folders (removed at exit), never artifacts/ or the user's ~/.cache, whose converted
# smollm2 would otherwise be loaded by a page before the ``smollm2_model`` fixture converts its own
if "VT_CHECKPOINT_DIR" not in os.environ:
    os.environ["VT_CHECKPOINT_DIR"] = tempfile.mkdtemp(prefix="vt-checkpoints-")
    atexit.register(shutil.rmtree, os.environ["VT_CHECKPOINT_DIR"], True)
if "VT_CACHE_DIR" not in os.environ:
    os.environ["VT_CACHE_DIR"] = tempfile.mkdtemp(prefix="vt-cache-")
    atexit.register(shutil.rmtree, os.environ["VT_CACHE_DIR"], True)

import numpy as np
import pytest
import torch

from viz_transformer.models.paper import PaperModel
from viz_transformer.records.kinds import KINDS
from viz_transformer.records.trace import Trace
from viz_transformer.testing.paper import tiny_paper_model

torch.set_num_threads(1)


@pytest.fixture
def tiny() -> PaperModel:
    """A random paper model (d_model 16, 2 heads, 2 + 2 layers), seed 0."""
    return tiny_paper_model()


def _same_trace(a: Trace, b: Trace) -> bool:
    return (
        (a.src_tokens, a.tgt_tokens, a.pred_tokens, a.output_text)
        == (b.src_tokens, b.tgt_tokens, b.pred_tokens, b.output_text)
        and all((a.get(k) is None) == (b.get(k) is None) for k in KINDS)
        and all(np.array_equal(a.get(k), b.get(k)) for k in KINDS)
    )


@pytest.fixture
def same_trace() -> Callable[[Trace, Trace], bool]:
    """``same_trace(a, b)``: bit-for-bit equality of every token list and attention array."""
    return _same_trace


@pytest.fixture(scope="session")
def smollm2_model(tmp_path_factory: pytest.TempPathFactory):
    """The built-in LLM ``smollm2``, converted from its wheel's GGUF once per test run into a
    temporary cache (``VT_CACHE_DIR``, kept for the session) and loaded through the registry."""
    import viz_transformer as vt

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VT_CACHE_DIR", str(tmp_path_factory.mktemp("vt-cache")))
        vt.prepare_model("smollm2")
        yield vt.load_model("smollm2")
