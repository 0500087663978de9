"""A throwaway JupyterLab for the notebook widgets' browser test and benchmark: its own config,
data and runtime folders, a random token, 127.0.0.1 only, no news or update checks, and the app
exposed to the page (``window.jupyterapp``) so a test can run cells by command; plus what a
Playwright page needs to run a notebook in it and to refuse every request that leaves the
machine."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from viz_transformer.testing.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
# page plugins that would fetch from the internet or nag: off
DISABLED = [
    "@jupyterlab/apputils-extension:announcements",
    "@jupyterlab/extensionmanager-extension",
]
READY_JS = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  return !!(w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel
            && w.sessionContext.session.kernel.status === 'idle'); }"""
RUN_ALL_JS = "() => window.jupyterapp.commands.execute('notebook:run-all-cells')"
RUN_CELL_JS = """async (i) => { const app = window.jupyterapp;
  app.shell.currentWidget.content.activeCellIndex = i;
  await app.commands.execute('notebook:run-cell'); }"""


@dataclass
class Lab:
    """A JupyterLab server: its base URL, token and the folder it serves."""

    url: str
    token: str
    folder: Path
    log: Path

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}"

    def end_sessions(self) -> int:
        """Shut every notebook session and its kernel down (the REST API), as when the kernel
        is gone: a notebook opened afterwards has no widget models to draw live. Returns how
        many sessions were ended."""
        auth = {"Authorization": f"token {self.token}"}
        listing = urllib.request.Request(f"{self.url}/api/sessions", headers=auth)
        with urllib.request.urlopen(listing, timeout=10) as answer:
            sessions = json.load(answer)
        for session in sessions:
            end = f"{self.url}/api/sessions/{session['id']}"
            urllib.request.urlopen(
                urllib.request.Request(end, headers=auth, method="DELETE"), timeout=30
            ).close()
        return len(sessions)


@dataclass
class LoopbackGuard:
    """Requests a browser context made, those refused for leaving 127.0.0.1 kept in ``outside``."""

    outside: list[str] = field(default_factory=list)
    count: int = 0

    def route(self, route: Any) -> None:
        self.count += 1
        url = route.request.url
        if urlparse(url).hostname in ("127.0.0.1", "localhost") or url.startswith("data:"):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()


def guard(context: Any) -> LoopbackGuard:
    """Route every request of a Playwright browser context through a ``LoopbackGuard``; also
    record websockets (not routed) that go elsewhere."""
    watch = LoopbackGuard()
    context.route("**/*", watch.route)

    def socket_opened(ws: Any) -> None:
        if urlparse(ws.url).hostname not in ("127.0.0.1", "localhost"):
            watch.outside.append(ws.url)

    context.on("page", lambda page: page.on("websocket", socket_opened))
    return watch


def _answers(url: str) -> bool:
    try:
        return urllib.request.urlopen(url, timeout=2).status == 200
    except OSError:
        return False


@contextlib.contextmanager
def temporary_lab(
    folder: Path, log: Path, timeout: float = 90, path: tuple[Path, ...] = ()
) -> Iterator[Lab]:
    """JupyterLab serving ``folder`` until the block ends (then stopped, killed if need be).

    Its config, data and runtime folders are new ones under ``folder/.lab``, so nothing of the
    user's Jupyter setup is read or written; extensions installed in this Python's environment
    (anywidget, ipywidgets, jupyterlab-plotly) are found as usual. The kernel runs this Python
    with one torch thread and the Hugging Face hub offline; it imports ``viz_transformer`` as
    installed (``pip install -e .``): ``PYTHONPATH`` is only ``path`` (the caller's own folders).

    Raises:
        AssertionError: the server did not answer within ``timeout`` s (its log says why).
    """
    home = folder / ".lab"
    for sub in ("config/labconfig", "data", "runtime", "ipython"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    (home / "config/labconfig/page_config.json").write_text(
        json.dumps({"disabledExtensions": {name: True for name in DISABLED}})
    )
    lab_config = {"news_url": None, "expose_app_in_browser": True, "extension_manager": "readonly",
                  "check_for_updates_class": "jupyterlab.NeverCheckForUpdate"}  # fmt: skip
    (home / "config/jupyter_server_config.json").write_text(json.dumps({"LabApp": lab_config}))
    port, token = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    dirs = {"CONFIG": "config", "DATA": "data", "RUNTIME": "runtime"}
    env.update({f"JUPYTER_{name}_DIR": str(home / sub) for name, sub in dirs.items()})
    env.update(
        IPYTHONDIR=str(home / "ipython"),
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        JUPYTER_PLATFORM_DIRS="1",
    )
    if path:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={folder}",
    ]
    if os.geteuid() == 0:  # CI and these machines run as root
        cmd.append("--allow-root")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while not _answers(f"{url}/api/status?token={token}"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield Lab(url, token, folder, log)
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=15)


def wire_bytes(state: Any) -> int:
    """Bytes a widget's ``state`` takes in a comm message: its JSON with the binary values taken
    out, plus those values (sent as binary buffers), as ipywidgets sends it."""
    buffers = []

    def plain(x: Any) -> Any:
        if isinstance(x, bytes | bytearray | memoryview):
            buffers.append(len(memoryview(x).cast("B")))
            return None
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [plain(v) for v in x]
        return x

    text = json.dumps(plain(state), separators=(",", ":"))
    return len(text) + sum(buffers)


def state_bytes(widget: Any) -> int:
    """What displaying ``widget`` sends: its whole synced state (the JavaScript included)."""
    return wire_bytes(widget.get_state())
