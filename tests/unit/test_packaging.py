"""The package declares ranges, the app keeps its lock: every pin of ``requirements*.txt`` lies
inside the range ``pyproject.toml`` declares for the same package (so the whole suite, run on the
lock, tests a release the library admits), torch's range stops before a release this machine's
pip would fetch as a multi-GB CUDA build, and no dependency of the package is pinned exactly
(an exact pin would replace a user's own torch or numpy)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
LOCKS = ("requirements.txt", "requirements-notebook.txt", "requirements-cluster.txt")


def declared() -> dict[str, Requirement]:
    """Every requirement of the package, its extras' included, by canonical name."""
    reqs = list(PROJECT["dependencies"])
    reqs += [r for extra in PROJECT["optional-dependencies"].values() for r in extra]
    return {canonicalize_name(Requirement(r).name): Requirement(r) for r in reqs}


def pins() -> dict[str, Version]:
    """``name==version`` of the app's lock files, by canonical name."""
    found = {}
    for name in LOCKS:
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-"):
                req = Requirement(line)
                (spec,) = req.specifier
                assert spec.operator == "==", f"{name}: {line} is not an exact pin"
                found[canonicalize_name(req.name)] = Version(spec.version)
    return found


def test_every_locked_release_lies_in_the_declared_range():
    locked = pins()
    for name, req in declared().items():
        assert name in locked, f"{name} is declared by pyproject.toml but locked nowhere"
        assert req.specifier.contains(locked[name]), f"{name}=={locked[name]} not in {req}"


def test_the_package_pins_nothing_exactly_and_bounds_every_range():
    for req in declared().values():
        ops = {spec.operator for spec in req.specifier}
        assert "==" not in ops, f"{req}: a library declares a range"
        assert ops >= {">=", "<"}, f"{req}: a range needs a floor and a ceiling"


def test_torch_admits_the_lock_and_the_other_release_on_this_disk_only():
    torch = declared()["torch"].specifier
    assert torch.contains("2.13.0") and torch.contains("2.14.1")  # .ci/wheel installs 2.14.1
    assert not torch.contains("2.15.0")
    wheel_test = (ROOT / ".ci" / "wheel").read_text(encoding="utf-8")
    assert re.search(r"^OTHER_TORCH=2\.14\.1\b", wheel_test, re.M)


def test_the_readmes_two_commands_are_two():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert section.count("```bash") == 2, "README's 'Two commands' shows another number of them"
