"""Which device models run on (``VT_DEVICE``, else CUDA, else Apple's mps, else the CPU) and in
which dtype (``VT_DTYPE``, else float32)."""

from __future__ import annotations

import torch

from viz_transformer import settings


def default_device() -> torch.device:
    """``VT_DEVICE`` when set (checked by ``check_device``), else ``cuda`` when present, else
    ``mps``, else ``cpu``.

    Raises:
        ValueError: ``VT_DEVICE`` names a device this machine lacks, saying what to use instead.
    """
    if settings.DEVICE is not None:
        return check_device(settings.DEVICE, f"VT_DEVICE={settings.DEVICE}")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def check_device(device: str | torch.device, what: str | None = None) -> torch.device:
    """``device`` as a ``torch.device``, once this machine is known to have it.

    Args:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a ``torch.device``.
        what: how the caller names the setting in messages (``"VT_DEVICE=cuda"``,
            ``"--device cuda"``); default ``device 'cuda'``.

    Raises:
        ValueError: an unknown device name, a device type models cannot run on (``meta``), or a
            device torch cannot see here; the message says what to use instead.
    """
    what = what or f"device {str(device)!r}"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"{what} is not a device name: use cpu, cuda, cuda:N or mps.") from None
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"{what} but torch sees no CUDA device: unset it or use cpu.")
        if dev.index is not None and dev.index >= count:
            raise ValueError(
                f"{what} but torch sees {count} CUDA device(s), cuda:0 to cuda:{count - 1}: "
                "use one of those or cpu."
            )
        return dev
    if dev.type == "mps":
        if not _mps_available():
            raise ValueError(f"{what} but torch sees no Apple GPU (mps): unset it or use cpu.")
        return dev
    raise ValueError(f"{what}: models run on cpu, cuda, cuda:N or mps, not {dev.type}.")


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def check_dtype(dtype: str | torch.dtype | None, what: str | None = None) -> torch.dtype:
    """``dtype`` as a ``torch.dtype`` models may load in; None: ``VT_DTYPE``, else float32.

    Args:
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"`` or one of those ``torch.dtype``s.
        what: how the caller names the setting in messages (``"--dtype"``); default from
            ``VT_DTYPE`` or ``dtype``.

    Raises:
        ValueError: any other name, saying which ones exist.
    """
    if dtype is None:
        if settings.DTYPE is None:
            return torch.float32
        dtype, what = settings.DTYPE, what or f"VT_DTYPE={settings.DTYPE}"
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype.strip().lower() in DTYPES:
        return DTYPES[dtype.strip().lower()]
    raise ValueError(
        f"{what or f'dtype {str(dtype)!r}'} is not a dtype models load in: use {', '.join(DTYPES)}."
    )


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``, the spelling ``check_dtype`` takes."""
    return str(dtype).removeprefix("torch.")
