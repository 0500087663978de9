"""The catalogue of bad inputs (issue 6): each gets a trace or one clear message, never a crash.

``python -m tests.integration.test_bad_inputs`` prints the catalogue with the observed outcome as
the Markdown table kept in docs/bad-inputs.md.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.figures.common import labels
from viz_transformer.models.hf.model import HFModel
from viz_transformer.models.hf.spec import hf_spec
from viz_transformer.text import uploads

LONG = " ".join(["The committee discussed the report on energy and water."] * 30)  # > 256 pieces
# (what, model, text, target, expected: "trace" or a fragment of the message)
CATALOGUE: list[tuple[str, str, str, str | None, str]] = [
    ("empty text", "bergamot-en-pt", "", None, "is empty"),
    ("only white space", "bergamot-en-pt", " \t\n  ", None, "is empty"),
    ("100,000 characters", "bergamot-en-pt", "a" * 100_000, None, "the limit is 40,000"),
    ("longer than the model's positions", "bergamot-en-pt", LONG, None, "were dropped"),
    ("longer than the positions (paper)", "paper-en-pt", LONG, None, "were dropped"),
    ("emoji", "bergamot-en-pt", "I love 🍕 and 🎉!", None, "trace"),
    ("CJK", "bergamot-en-pt", "我爱你。東京は大きい。", None, "trace"),
    ("right-to-left", "bergamot-en-pt", "مرحبا بالعالم שלום עולם", None, "trace"),
    ("combining marks", "bergamot-en-pt", "cafe\u0301 nai\u0308ve", None, "trace"),
    ("zero-width characters", "bergamot-en-pt", "zero\u200bwidth\u200djoin\ufeff", None, "trace"),
    ("control characters", "bergamot-en-pt", "bell\x07 escape\x1b[31m tab\t", None, "trace"),
    ("NUL bytes", "bergamot-en-pt", "nul\x00byte\x00here", None, "trace"),
    ("HTML and script", "bergamot-en-pt", "<script>alert(1)</script><b>bold</b>", None, "trace"),
    ("Markdown and LaTeX", "bergamot-en-pt", "**bold** [x](javascript:1) $x^2$ :smile:", None,
     "trace"),
    ("a word outside a toy model's vocabulary", "paper-sov", "the dog sees a purple cat", None,
     "does not know 'purple'"),
    ("emoji for a toy model", "paper-sov", "the dog sees a cat 🍕", None, "does not know '🍕'"),
    ("empty teacher-forcing target", "paper-sov", "the dog sees a cat", "  ", "target is empty"),
    ("target in the wrong language", "paper-sov", "the dog sees a cat", "o cão vê um gato",
     "does not know"),
    ("target in the wrong language (real model)", "bergamot-en-pt", "The dog sees a cat.",
     "Der Hund sieht eine Katze.", "trace"),
    ("unknown Hugging Face id (offline)", "hf:no-such-owner/no-such-model", "hi", None,
     "not in the local Hugging Face cache"),
    ("path-like Hugging Face id", "hf:../../etc/passwd", "hi", None, "is not a Hugging Face model"),
    ("id with a space", "hf:a b", "hi", None, "is not a Hugging Face model"),
]  # fmt: skip


def outcome(model: str, text: str, target: str | None) -> tuple[str, vt.Trace | None]:
    """("trace" + any messages, trace) or (the error message, None)."""
    try:
        tr = vt.trace(vt.load_model(model), text, target)
    except (ValueError, RuntimeError, OSError) as exc:
        return str(exc), None
    return " ".join(["trace", *tr.messages]), tr


@pytest.mark.parametrize(("what", "model", "text", "target", "expected"), CATALOGUE,
                         ids=[c[0] for c in CATALOGUE])  # fmt: skip
def test_each_bad_input_gets_a_trace_or_one_clear_message(
    what, model, text, target, expected, monkeypatch, need
):
    if model.startswith("bergamot"):
        need("bergamot")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    said, tr = outcome(model, text, target)
    assert expected in said, f"{what}: {said}"
    if tr is not None:
        tr.validate()
        for token in (*tr.src_tokens, *tr.tgt_tokens):  # labels never carry live markup
            assert "<" not in labels([token])[0] and ">" not in labels([token])[0]


@pytest.mark.needs("bergamot")
def test_markup_in_text_is_escaped_in_figures_and_messages():
    tr = vt.trace(vt.load_model("bergamot-en-pt"), "<script>alert(1)</script>")
    shown = labels(tr.src_tokens)
    assert any("&lt;" in s for s in shown) and not any("<script" in s for s in shown)


@pytest.mark.parametrize(
    ("what", "data", "expected"),
    [
        ("binary file", bytes(range(256)) * 10, "binary"),
        ("empty file", b"", "empty"),
        ("Latin-1 file", "Olá, coração.\nÉ verdade.\n".encode("latin-1"), "Latin-1"),
        ("UTF-16 with BOM", "\ufeffHello there.\nGood bye.\n".encode("utf-16"), None),
        ("10 MB file", b"One sentence.\n" * 750_000, "KB"),
        ("CSV instead of one sentence per line", b"a,b,c\n1,2,3\n", "CSV"),
    ],
)
def test_uploads_get_lines_or_a_message(what, data, expected):
    try:
        up = uploads.read_lines(data, "f.csv" if "CSV" in what else "f.txt")
    except ValueError as exc:
        assert expected and expected.lower() in str(exc).lower()
        return
    assert up.lines
    if expected:
        assert any(expected.lower() in n.lower() for n in up.notes), up.notes


def test_a_pickle_only_checkpoint_runs_no_code(tmp_path):
    from viz_transformer.testing.hf import BUILDERS

    folder = BUILDERS["bert"](tmp_path / "bert")
    for f in folder.glob("*.safetensors"):
        f.unlink()
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"w": Evil()}))
    with pytest.raises((ValueError, OSError, RuntimeError)):
        HFModel.load(hf_spec(f"hf:{folder}"), "cpu")
    assert not marker.exists(), "loading a pickle ran its code"


def test_a_local_folder_outside_the_allowed_root_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(settings, "MODEL_ROOT", tmp_path / "allowed")
    with pytest.raises(ValueError, match="outside the folder this server lets you load"):
        hf_spec(f"hf:{tmp_path / 'elsewhere'}")


def main() -> None:
    print("| input | model | what the user sees |")
    print("|---|---|---|")
    for what, model, text, target, _ in CATALOGUE:
        said, _tr = outcome(model, text, target)
        said = said.replace("|", "\\|").replace("\n", " ")
        print(f"| {what} | `{model}` | {said} |")


if __name__ == "__main__":
    main()
