"""Does the unit tier catch small realistic bugs? Each row of ``mutations.tsv`` beside this
script (wrong axis, wrong divisor, off-by-one, wrong sign, swapped arguments, mean for sum, a
dropped filter, in ablation, why, writes, flow, lesson grading, the class reports, and the tiles
and lazy maps of long inputs: dtype, scale, causal offset, log-sum-exp) is applied alone to a
copy of the committed tree (``git archive HEAD``; the checkout is never touched), then the
file's own tests run, and where they pass, the whole unit tier (``-x``, fixed order). A mutation
is caught when pytest fails. Prints one line per mutation and the totals; rows whose text is no
longer in their file (the code moved) are listed as stale.

Run: ``python bench/tooling/mutations.py [NAME_PREFIX ...]`` (e.g. ``A`` for ablation only);
about 10-30 s a mutation, minutes for a survivor (the whole tier).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = Path(__file__).with_name("mutations.tsv")
U, IT = "tests/unit/", "tests/integration/"
# each mutated file's own tests, run first (a fast answer for the mutations they catch); the
# model-heavy ones live in the integration tier
RELATED = {
    "ablation.py": [U + "test_heads.py", U + "test_ablation_effects.py",
                    U + "test_definitions_ablation.py"],
    "why.py": [U + "test_definitions_why.py", U + "test_rotary_split.py", IT + "test_why.py",
               IT + "test_component_outputs.py"],
    "components.py": [IT + "test_why.py", IT + "test_component_outputs.py",
                      U + "test_definitions_why.py"],
    "writes.py": [IT + "test_why.py", IT + "test_component_outputs.py",
                  U + "test_definitions_writes.py"],
    "flow.py": [U + "test_flow.py", U + "test_definitions_flow.py"],
    "graders.py": [U + "test_lesson_grading.py", U + "test_definitions_grading.py"],
    "reports.py": [U + "test_class_store.py", U + "test_definitions_reports.py"],
    "tiles.py": [U + "test_tiles.py", U + "test_long_exact.py", U + "test_patterns.py"],
    "lazy.py": [U + "test_tiles.py", U + "test_patterns.py", U + "test_long_exact.py"],
    "walkthrough.py": [U + "test_walkthrough_math.py"],
    "generation.py": [U + "test_token_rules_math.py"],
    "payload.py": [U + "test_notebook_payload.py", U + "test_notebook_widgets.py"],
    "rope.py": [U + "test_rope_math.py", U + "test_rotary_split.py"],
}  # fmt: skip


def rows() -> list[tuple[str, str, str, str]]:
    """``(name, path, old, new)`` of every row of the table (``\\n`` read as a newline)."""
    out = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, path, old, new = line.split("\t")
            out.append((name, path, old.replace("\\n", "\n"), new.replace("\\n", "\n")))
    return out


def pytest(tree: Path, targets: list[str]) -> tuple[bool, str]:
    """Whether pytest failed on ``targets`` in ``tree``, and its first failure line."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *targets,
        "-q",
        "-x",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    ]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    failed = [ln for ln in done.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    return done.returncode != 0, (failed or [""])[0][:110]


def run(tree: Path, path: str, old: str, new: str) -> tuple[str, str]:
    """Apply one mutation in ``tree``, test, restore: ``(verdict, first failure)``."""
    file = tree / path
    text = file.read_text(encoding="utf-8")
    if text.count(old) != 1:
        return "stale", f"the text is in {path} {text.count(old)} times, not once"
    file.write_text(text.replace(old, new), encoding="utf-8")
    try:
        related = [t for t in RELATED.get(Path(path).name, []) if (tree / t).exists()]
        caught, first = pytest(tree, related) if related else (False, "")
        if not caught:
            caught, first = pytest(tree, ["tests/unit"])
        return ("caught" if caught else "SURVIVED"), first
    finally:
        file.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("only", nargs="*", help="run the mutations whose name starts so")
    args = parser.parse_args(argv)
    chosen = [r for r in rows() if not args.only or r[0].lstrip("=").startswith(tuple(args.only))]
    verdicts: dict[str, list[str]] = {"caught": [], "SURVIVED": [], "stale": []}
    with tempfile.TemporaryDirectory(prefix="vt-mutations-") as tmp:
        tree = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        for name, path, old, new in chosen:
            began = time.perf_counter()
            verdict, first = run(tree, path, old, new)
            verdicts[verdict].append(name)
            print(f"{verdict:8} {time.perf_counter() - began:5.0f} s  {name}  {first}", flush=True)
    equivalent = [n for n in verdicts["SURVIVED"] if n.startswith("=")]
    print(
        f"{len(chosen)} mutations: {len(verdicts['caught'])} caught, "
        f"{len(verdicts['SURVIVED']) - len(equivalent)} survived, {len(equivalent)} equivalent "
        f"(survive by construction), {len(verdicts['stale'])} stale"
    )
    for name in verdicts["SURVIVED"]:
        print(f"  survived: {name}")


if __name__ == "__main__":
    main()
