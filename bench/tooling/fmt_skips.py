"""``# fmt: skip`` only on literal tables (issue 48): a marker keeps a hand-aligned table of
constants readable; on an ordinary statement it only makes the written file differ from the
formatted one. One reproducible step over the library, the pages and app.py:

    python bench/tooling/fmt_skips.py            # list each marker: kept (a table) or removed
    python bench/tooling/fmt_skips.py --apply    # remove the others' markers, then ruff format
    python bench/tooling/fmt_skips.py --check    # exit 1 if a marker sits on no table

A literal table is an assignment (or a bare expression) whose value is a list, tuple, set or dict
of constants, negated numbers and such containers nested, and nothing else (no call, no name).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"[ \t]*# fmt: skip[ \t]*$")
CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict)


def files(root: Path = ROOT) -> list[Path]:
    """The library, the pages and app.py: where the marker rule holds."""
    return sorted(
        [*root.glob("viz_transformer/**/*.py"), *root.glob("pages/**/*.py"), root / "app.py"]
    )


def literal(node: ast.AST | None) -> bool:
    """Whether ``node`` is a constant, a negated number, or a container of literals."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.Dict):
        return all(literal(k) and literal(v) for k, v in zip(node.keys, node.values, strict=True))
    if isinstance(node, CONTAINERS):
        return all(literal(e) for e in node.elts)
    return False


def table(statement: ast.stmt) -> bool:
    """Whether ``statement`` assigns (or is) a literal container."""
    value = getattr(statement, "value", None)
    return isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Expr)) and (
        isinstance(value, CONTAINERS) and literal(value)
    )


def markers(text: str) -> list[tuple[int, bool]]:
    """``(line, on a table)`` for each line of ``text`` that ends with the marker."""
    statements = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.stmt)]
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if MARKER.search(line):
            ending = [s for s in statements if s.end_lineno == number]
            out.append((number, any(table(s) for s in ending)))
    return out


def without_markers(text: str) -> str:
    """``text`` with the marker taken off every line that carries no table."""
    off = {n for n, kept in markers(text) if not kept}
    lines = text.splitlines(keepends=True)
    for n in off:
        ending = "\n" if lines[n - 1].endswith("\n") else ""
        lines[n - 1] = MARKER.sub("", lines[n - 1].rstrip("\n")) + ending
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apply", action="store_true", help="remove markers, then ruff format")
    parser.add_argument("--check", action="store_true", help="fail on a marker on no table")
    args = parser.parse_args(argv)
    found = {p: markers(p.read_text(encoding="utf-8")) for p in files()}
    kept = sum(k for marks in found.values() for _, k in marks)
    off = [(p, n) for p, marks in found.items() for n, k in marks if not k]
    for path, number in off:
        print(f"{path.relative_to(ROOT)}:{number}: on no literal table")
    print(f"{kept + len(off)} markers: {kept} on literal tables, {len(off)} on other statements")
    if args.apply and off:
        changed = sorted({p for p, _ in off})
        for path in changed:
            path.write_text(without_markers(path.read_text(encoding="utf-8")), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "ruff", "format", *map(str, changed)], check=True)
    return 1 if args.check and off else 0


if __name__ == "__main__":
    sys.exit(main())
