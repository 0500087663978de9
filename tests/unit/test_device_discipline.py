"""Device discipline (issue 13), checked on a CPU-only machine: every tensor that
``viz_transformer/``, ``tests/`` and ``bench/`` make from nothing names its device.

A CUDA run of the suite once failed because code built CPU tensors for a model on ``cuda`` (the
training evaluation's ``greedy_decode`` inputs, test inputs). This test parses every file (ast)
and flags each ``torch.<factory>(...)`` call that does not pass ``device=`` and is not moved at
once (``torch.tensor(ids).to(dev)``). A parameter or buffer built inside ``nn.Parameter(...)`` or
``register_buffer(...)`` is accepted: it moves with its module. ``torch.tril``/``triu`` take a
tensor and keep its device, so the factory inside them is what gets checked.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("viz_transformer", "tests", "bench")
# functions of torch that make a new tensor from Python values, shapes or numpy arrays
FACTORIES = frozenset(
    {
        "tensor",
        "as_tensor",
        "from_numpy",
        "zeros",
        "ones",
        "full",
        "empty",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "rand",
        "randn",
        "randint",
        "randperm",
        "tril_indices",
        "triu_indices",
    }
)
# (file, factory): host-only code, each with its reason
ALLOWED = {
    ("viz_transformer/records/tiles.py", "from_numpy"): "block_reduce pools a map that is "
    "already on the host (a figure's array)",
    ("viz_transformer/models/marian_binary.py", "from_numpy"): "reads the weight file into CPU "
    "tensors that load_state_dict copies onto the module's device",
    ("bench/bench_bertviz.py", "tensor"): "bertviz takes CPU tensors; it draws, it runs no model",
    ("tests/unit/test_patterns.py", "from_numpy"): "the reference for LazyPatterns, on the same "
    "host arrays",
}
MOVES = frozenset({"to", "cuda"})  # torch.tensor(...).to(dev), torch.zeros(...).cuda()
OWNED = frozenset({"Parameter", "register_buffer"})  # moves with its module


def _torch_names(tree: ast.AST) -> tuple[set[str], dict[str, str]]:
    """Names bound to the torch module (``torch``, ``th``) and factories imported by name."""
    modules, functions = {"torch"}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "torch"}
        elif isinstance(node, ast.ImportFrom) and node.module == "torch":
            functions |= {a.asname or a.name: a.name for a in node.names if a.name in FACTORIES}
    return modules, functions


def _factory(call: ast.Call, modules: set[str], functions: dict[str, str]) -> str | None:
    fn = call.func
    if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name):
        return fn.attr if fn.value.id in modules and fn.attr in FACTORIES else None
    return functions.get(fn.id) if isinstance(fn, ast.Name) else None


def _placed(call: ast.Call, parents: dict[ast.AST, ast.AST]) -> bool:
    """The call names a device, is moved at once (``[None]`` in between is fine), or belongs to
    a module."""
    if any(k.arg == "device" for k in call.keywords):
        return True
    node, parent = call, parents.get(call)
    while isinstance(parent, ast.Subscript) and parent.value is node:
        node, parent = parent, parents.get(parent)
    if isinstance(parent, ast.Attribute) and parent.attr in MOVES:
        return True
    if isinstance(parent, ast.Call) and node in parent.args:
        name = parent.func.attr if isinstance(parent.func, ast.Attribute) else None
        name = parent.func.id if isinstance(parent.func, ast.Name) else name
        return name in OWNED
    return False


def offenders(source: str, path: str = "<snippet>") -> list[str]:
    """``path:line torch.<factory>(...)`` for every factory call that names no device."""
    if "torch" not in source:  # no torch import, no torch factory
        return []
    tree = ast.parse(source)
    modules, functions = _torch_names(tree)
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (name := _factory(node, modules, functions)) is not None
        and (path, name) not in ALLOWED
    ]
    if not calls:  # most files: no parent map to build
        return []
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = [
        (node.lineno, f"{path}:{node.lineno} {ast.unparse(node)[:80]}")
        for node in calls
        if not _placed(node, parents)
    ]
    return [line for _, line in sorted(found)]


# how training evaluated a model before issue 13: its inputs were made on the default device
BEFORE = """
import torch

def exact_match(model, vocab, data):
    src = torch.tensor([vocab.encode(s) for s, _ in data])
    memory = model.encode(src, (src != vocab.pad_id)[:, None, None, :])
    return greedy_decode(model, memory, 40, bos_id=vocab.bos_id)

def greedy_decode(model, memory, max_new, *, bos_id):
    ys = torch.full((memory.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(memory.shape[0], dtype=torch.bool)
    return model.decode(memory, ys), done
"""

AFTER = """
import torch
from torch import nn
from torch import zeros as z

def exact_match(model, vocab, data):
    src = torch.tensor([vocab.encode(s) for s, _ in data], device=model.pe.device)
    ids = torch.tensor(data)[None].to(src.device)
    return torch.tril(torch.ones(3, 3, device=src.device)), ids, z(2, device="cpu")

class Net(nn.Module):
    def __init__(self):
        self.bias = nn.Parameter(torch.zeros(4))
        self.register_buffer("pe", torch.arange(8))
"""


def test_the_check_catches_inputs_made_on_the_default_device():
    assert offenders(BEFORE) == [
        "<snippet>:5 torch.tensor([vocab.encode(s) for s, _ in data])",
        "<snippet>:10 torch.full((memory.shape[0], 1), bos_id, dtype=torch.long)",
        "<snippet>:11 torch.zeros(memory.shape[0], dtype=torch.bool)",
    ]
    assert offenders(AFTER) == []
    aliased = "import torch as th\nfrom torch import ones\nx = th.rand(3)\ny = ones(2)\n"
    assert offenders(textwrap.dedent(aliased)) == ["<snippet>:3 th.rand(3)", "<snippet>:4 ones(2)"]


def test_every_tensor_made_in_the_library_tests_and_bench_names_its_device():
    found = []
    for folder in FOLDERS:
        for file in sorted((ROOT / folder).rglob("*.py")):
            rel = file.relative_to(ROOT).as_posix()
            found += offenders(file.read_text(encoding="utf-8"), rel)
    assert not found, (
        "tensors made without a device (pass device=<the model's device>, e.g. "
        "next(module.parameters()).device, or .to(device) at once):\n" + "\n".join(found)
    )


def test_the_allow_list_names_real_uses():
    for path, name in ALLOWED:
        source = (ROOT / path).read_text(encoding="utf-8")
        assert f"torch.{name}(" in source, (
            f"{path} no longer calls torch.{name}: drop it from ALLOWED"
        )
