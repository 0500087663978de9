"""``vt.load_model("paper:<folder>")``: any folder in the shipped paper models' layout loads,
and a missing file or weights that do not fit the config get a message naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.settings import WEIGHTS_DIR


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the shipped ``paper-reverse`` folder."""
    return Path(shutil.copytree(WEIGHTS_DIR / "paper-reverse", tmp_path / "run" / "step-100"))


def test_a_copied_folder_traces_as_the_shipped_model(folder: Path) -> None:
    model = vt.load_model(f"paper:{folder}")
    assert model.name == f"paper:{folder}" and model.spec.task == "reverse"
    text = "happy king red ship"
    mine, shipped = vt.trace(model, text), vt.trace(vt.load_model("paper-reverse"), text)
    assert mine.output_text == shipped.output_text == "ship red king happy"
    assert np.array_equal(mine.cross, shipped.cross)


@pytest.mark.parametrize("missing", ["meta.json", "model.safetensors", "vocab.json"])
def test_a_missing_file_is_named(folder: Path, missing: str) -> None:
    (folder / missing).unlink()
    with pytest.raises(ValueError, match=rf"{folder / missing}.* is missing"):
        vt.load_model(f"paper:{folder}")


def test_a_missing_folder_and_bad_meta_are_named(folder: Path) -> None:
    with pytest.raises(ValueError, match="is not a folder"):
        vt.load_model(f"paper:{folder}-nope")
    (folder / "meta.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"meta.json is not valid JSON"):
        vt.load_model(f"paper:{folder}")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"d_model": 64}, r"model.safetensors does not match the config in .*meta.json"),
        (
            {"n_encoder_layers": 3},
            r"model.safetensors does not match .*missing \['encoder.layers.2",
        ),
        ({"vocab_size": 99}, r"model.safetensors does not match"),
        ({"n_heads": 3}, r"meta.json: its config is invalid .*n_heads=3"),
    ],
)
def test_weights_that_do_not_fit_the_config_are_named(
    folder: Path, change: dict, message: str
) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    meta["config"].update(change)
    (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=message):
        vt.load_model(f"paper:{folder}")


def test_a_vocabulary_of_another_model_is_named(folder: Path) -> None:
    shutil.copy(WEIGHTS_DIR / "paper-sov" / "vocab.json", folder / "vocab.json")
    with pytest.raises(ValueError, match=r"vocab.json holds \d+ tokens but the config"):
        vt.load_model(f"paper:{folder}")
