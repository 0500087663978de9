"""Nothing assumes a device (issue 5, target 6): models load and trace with an explicit device,
given as a string or a ``torch.device``, and whatever ran the model, every array a page receives
(trace maps, decoding steps, position tables) is CPU float32 numpy.

This machine has no GPU: the CUDA test compares a CUDA trace with a CPU trace where one exists
and is reported as skipped elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.records.kinds import KINDS
from viz_transformer.records.trace import Trace
from viz_transformer.testing.hf import BUILDERS, TARGET, TEXT

DEVICES = ["cpu", torch.device("cpu")]
HF = ("marian", "bert")


def assert_cpu_float32(arr: object, what: str) -> None:
    """``arr`` is host memory a figure can read: a numpy float32 array (or lazy patterns, which
    turn into one)."""
    host = np.asarray(arr)
    assert type(host) is np.ndarray, f"{what} is {type(arr).__name__}"
    assert host.dtype == np.float32, f"{what} is {host.dtype}"
    assert not isinstance(arr, torch.Tensor), f"{what} is a tensor"


def assert_trace_on_host(tr: Trace, kinds: tuple[str, ...]) -> None:
    for kind in KINDS:
        arr = tr.get(kind)
        assert (arr is not None) == (kind in kinds), kind
        if arr is not None:
            assert_cpu_float32(arr, f"{tr.model_name} {kind}")
            np.testing.assert_allclose(np.asarray(arr).sum(-1), 1.0, atol=1e-5)


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf-device")
    return {name: BUILDERS[name](root / name) for name in HF}


def _on(module: torch.nn.Module, device: torch.device) -> bool:
    return all(p.device.type == device.type for p in module.parameters())


@pytest.mark.parametrize("device", DEVICES, ids=repr)
def test_paper_model_loads_and_traces_on_an_explicit_device(device):
    model = vt.load_model("paper-reverse", device=device)
    assert model.device == torch.device("cpu") and _on(model.module, model.device)
    assert vt.load_model("paper-reverse", device="cpu") is model  # one handle per device
    tr = vt.trace(model, model.spec.example)
    assert_trace_on_host(tr, ("encoder", "decoder", "cross"))
    forced = vt.trace(model, model.spec.example, target=tr.output_text)
    np.testing.assert_array_equal(forced.cross, tr.cross)
    assert_cpu_float32(model.position_table(), "position table")


@pytest.mark.parametrize("device", DEVICES, ids=repr)
def test_paper_decoding_steps_are_host_arrays(device):
    model = vt.load_model("paper-reverse", device=device)
    step = model.decoder_session(model.spec.example).score([])
    for what in ("logprobs", "self_row", "cross_row"):
        assert_cpu_float32(getattr(step, what), what)


@pytest.mark.parametrize("device", DEVICES, ids=repr)
@pytest.mark.parametrize("name", HF)
def test_hf_model_loads_and_traces_on_an_explicit_device(name, device, hf_dirs):
    model = vt.load_model(f"hf:{hf_dirs[name]}", device=device)
    assert model.device == torch.device("cpu") and _on(model.module, model.device)
    assert vt.load_model(f"hf:{hf_dirs[name]}", device="cpu") is model
    target = TARGET if name == "marian" else None
    assert_trace_on_host(vt.trace(model, TEXT, target=target), model.spec.shows)
    table = model.position_table()
    if table is not None:
        assert_cpu_float32(table, "position table")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("name", ["paper-reverse", *HF])
def test_a_cuda_trace_equals_the_cpu_trace(name, hf_dirs):
    name = name if name.startswith("paper") else f"hf:{hf_dirs[name]}"
    cpu, cuda = vt.load_model(name, device="cpu"), vt.load_model(name, device="cuda")
    assert cuda.device.type == "cuda" and _on(cuda.module, cuda.device)
    text = cpu.spec.example if name.startswith("paper") else TEXT
    target = TARGET if "marian" in name else None
    a, b = vt.trace(cpu, text, target=target), vt.trace(cuda, text, target=target)
    assert_trace_on_host(b, cpu.spec.shows)
    for kind in cpu.spec.shows:
        np.testing.assert_allclose(np.asarray(b.get(kind)), np.asarray(a.get(kind)), atol=1e-4)


def test_the_default_device_is_cuda_when_present(monkeypatch):
    monkeypatch.setattr(settings, "DEVICE", None)  # VT_DEVICE unset
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert vt.default_device() == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert vt.default_device() == torch.device("cpu")


def test_cuda_with_and_without_its_index_is_one_device(monkeypatch):
    from viz_transformer.models.registry import canonical_device

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert canonical_device(torch.device("cuda")) == torch.device("cuda:0")
    assert canonical_device(torch.device("cuda:1")) == torch.device("cuda:1")
    assert canonical_device(torch.device("cpu")) == torch.device("cpu")


def test_vt_device_picks_the_device_and_a_missing_one_says_what_to_do(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # would win without VT_DEVICE
    monkeypatch.setattr(settings, "DEVICE", "cpu")
    assert vt.default_device() == torch.device("cpu")
    assert vt.load_model("paper-reverse").device == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(settings, "DEVICE", "cuda:1")
    with pytest.raises(ValueError, match=r"VT_DEVICE=cuda:1 but torch sees 1 CUDA device\(s\)"):
        vt.default_device()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(settings, "DEVICE", "cuda")
    with pytest.raises(ValueError, match="VT_DEVICE=cuda but torch sees no CUDA device: unset it"):
        vt.load_model("paper-reverse")
    for bad, why in [("meta", "not meta"), ("gpu", "is not a device name")]:
        monkeypatch.setattr(settings, "DEVICE", bad)
        with pytest.raises(ValueError, match=why):
            vt.default_device()
        with pytest.raises(ValueError, match=f"device '{bad}'.*{why}"):
            vt.load_model("paper-reverse", device=bad)
