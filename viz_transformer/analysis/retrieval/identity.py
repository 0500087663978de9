"""A cheap identity of a model's weights, for naming the runs a retrieval sweep keeps.

Hashing every weight costs as much as reading the model (16 GB for an 8B model); this hashes the
model's config (not the folder it came from) and, per tensor, its name, shape, dtype and 64
values spread evenly over it. Any retraining, fine-tuning or new checkpoint moves those samples;
two models that differ only in weights the samples miss would share an identity, which for this
use (a cache of runs) means a stale run at worst, never a wrong model loaded.
"""

from __future__ import annotations

import hashlib
import json
import weakref

import torch

from viz_transformer.models.base import LoadedModel

SAMPLES = 64  # values read per tensor
_IDS: weakref.WeakKeyDictionary[LoadedModel, str] = weakref.WeakKeyDictionary()


def sample_at(n: int, k: int = SAMPLES) -> list[int]:
    """``min(k, n)`` positions spread evenly over ``0..n - 1``, the first and the last included
    (integers: a float32 ``linspace`` rounds past the end above 2**24 elements)."""
    k = min(k, n)
    return [i * (n - 1) // max(k - 1, 1) for i in range(k)]


def model_identity(model: LoadedModel) -> str:
    """SHA-256 (hex) of the config and a sample of every tensor, once per model object:
    reads ``SAMPLES`` values per tensor, whatever the model's size."""
    if model not in _IDS:
        h = hashlib.sha256()
        config = getattr(model.module, "config", None)
        facts = config.to_dict() if hasattr(config, "to_dict") else {}
        facts.pop("_name_or_path", None)  # where it was read from is no part of the weights
        h.update(json.dumps(facts, sort_keys=True, default=str).encode())
        with torch.no_grad():
            for name, t in sorted(model.module.state_dict().items()):
                h.update(f"\0{name}{tuple(t.shape)}{t.dtype}".encode())
                if t.device.type == "meta" or t.numel() == 0:
                    continue  # offloaded: its shape is all there is to read
                flat = t.detach().reshape(-1)
                at = torch.as_tensor(sample_at(flat.numel()), device=flat.device)
                sample = flat[at].float().cpu().numpy()
                h.update(sample.tobytes())
        _IDS[model] = h.hexdigest()
    return _IDS[model]
