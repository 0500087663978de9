"""What a page's long job may take (``ui.budget``) and what it is estimated to take
(``ui.estimates``): a job above the room is refused with a message before it starts, the room is
the setting or the device's free memory, whichever is smaller, and a kept record weighs what it
holds (each array once, a lazy trace's queries and keys as they are fetched)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from viz_transformer import settings
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.ui import budget, estimates

CPU = torch.device("cpu")


def test_a_job_above_the_setting_is_refused_with_what_it_would_take(monkeypatch) -> None:
    monkeypatch.setattr(settings, "JOB_MEMORY_MB", 100)
    monkeypatch.setattr(budget, "free_bytes", lambda device: 10 * 2**30)
    budget.require("A job", 100 * budget.MB, CPU, "Do less.")  # exactly the room: fits
    with pytest.raises(budget.TooLarge) as refused:
        budget.require("A job", 100 * budget.MB + 1, CPU, "Do less.")
    message = str(refused.value)
    assert "A job would take about 100 MB" in message and "VT_JOB_MEMORY_MB=100" in message
    assert message.endswith("Do less.") and isinstance(refused.value, ValueError)


def test_the_room_is_what_the_device_has_free_when_that_is_less(monkeypatch) -> None:
    monkeypatch.setattr(settings, "JOB_MEMORY_MB", 4096)
    monkeypatch.setattr(budget, "free_bytes", lambda device: 300 * budget.MB)
    assert budget.room(CPU) == (300 * budget.MB, "what cpu memory is free now")
    with pytest.raises(budget.TooLarge, match="more than 300 MB"):
        budget.require("A job", 301 * budget.MB, CPU, "")
    monkeypatch.setattr(budget, "free_bytes", lambda device: None)  # unknown: the setting
    assert budget.room(CPU)[0] == 4096 * budget.MB


def test_the_machine_free_memory_is_read_on_linux() -> None:
    free = budget.free_bytes(CPU)
    assert free is None or 0 < free < 2**50


@dataclasses.dataclass(frozen=True)
class _Record:
    a: np.ndarray
    view: np.ndarray
    parts: dict
    module: torch.nn.Module


def test_a_record_weighs_each_array_once_and_never_a_module() -> None:
    a = np.zeros((100, 10), np.float32)  # 4,000 bytes
    t = torch.zeros(50, dtype=torch.float64, device="cpu")  # 400 bytes
    record = _Record(a, a[3:5], {"t": t, "again": t[:10], "list": [a]}, torch.nn.Linear(99, 99))
    assert budget.held_bytes(record) == 4000 + 400


def test_a_lazy_trace_weighs_the_layers_it_has_fetched() -> None:
    q = torch.zeros(2, 16, 4, device="cpu")  # one layer's queries and keys: 2 x 256 bytes

    def fetch(layer: int) -> dict:
        return {layer: (q.clone(), q.clone(), 0.5)}

    lazy = LazyPatterns.deferred((3, 2, 16, 16), True, fetch)
    empty = budget.held_bytes(lazy)
    lazy.head(0, 0)
    one = budget.held_bytes(lazy)
    lazy.head(2, 1)
    two = budget.held_bytes(lazy)
    assert one - empty >= 512 and two - one >= 512  # queries and keys; heads cached beside


SMOLLM2 = dict(d_model=576, heads=9, kv_heads=3, d_head=64, d_ff=1536, vocab=49152)


def _arch(**shape) -> ArchitectureSummary:
    fields = {f.name: None for f in dataclasses.fields(ArchitectureSummary)}
    fields.update(name="m", layers={"decoder": 30}, **shape)
    return ArchitectureSummary(**fields)


def test_a_capture_of_every_pattern_grows_with_the_square_of_the_length() -> None:
    arch = _arch(**SMOLLM2)
    every = [estimates.capture_bytes(arch, 30, n, n, 30) for n in (1000, 2000)]
    one = [estimates.capture_bytes(arch, 30, n, n, 0) for n in (1000, 2000)]
    assert 3.5 < every[1] / every[0] < 4.0  # the patterns dominate
    assert one[1] / one[0] < 2.01  # without patterns: linear
    # measured (smollm2, 800 tokens): 2.9 GB at the peak; the estimate must not be below it
    assert estimates.capture_bytes(arch, 30, 800, 800, 30) >= 2.9 * 2**30


def test_a_decoding_estimate_covers_what_smollm2_took() -> None:
    arch = _arch(**SMOLLM2)
    for tokens, measured_gib in ((1500, 0.48), (3000, 1.19)):  # models/hf/steps.py, 40 steps
        need = estimates.decode_bytes(arch, tokens, 40, 1)
        assert measured_gib * 2**30 <= need <= 2 * measured_gib * 2**30
    assert estimates.decode_bytes(arch, 3000, 40, 4) > estimates.decode_bytes(arch, 3000, 40, 1)
