"""``python -m viz_transformer serve``: N app replicas behind HAProxy, one front URL.

Checks first (haproxy installed, front port free, config valid: one-line errors), then starts the
replicas on free loopback ports, waits until each has loaded the default model and answers its
health check, starts HAProxy, prints the front URL, and restarts any replica that dies until
SIGTERM or Ctrl+C stops every child.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from viz_transformer.serve.config import (
    Replica,
    ServeError,
    check_port_free,
    find_haproxy,
    free_ports,
    render,
)
from viz_transformer.serve.supervisor import POLL_S, STOP_GRACE_S, Supervisor, child_env

ROOT = Path(__file__).resolve().parents[2]  # the checkout: app.py, pages/, .streamlit/


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line of ``serve``."""
    p = argparse.ArgumentParser(prog="python -m viz_transformer serve", description=__doc__)
    p.add_argument("--replicas", type=int, default=2, help="app processes (about one per core)")
    p.add_argument("--port", type=int, default=8501, help="the front port students open")
    p.add_argument("--address", default="127.0.0.1", help="0.0.0.0 serves the classroom network")
    p.add_argument("--haproxy", default=None, help="the haproxy executable (default: on PATH)")
    p.add_argument(
        "--run-dir",
        type=Path,
        default=None,
        help="config, logs, replicas.json (default: a new temp folder)",
    )
    p.add_argument("--start-timeout", type=float, default=300, help="seconds to become healthy")
    return p.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple[str, Path, list[Replica]]:
    """Checks and the rendered config; returns (haproxy, config path, replicas).

    Raises:
        ServeError: bad arguments, no haproxy, a busy port or a config haproxy refuses.
    """
    if args.replicas < 1:
        raise ServeError(f"--replicas {args.replicas}: at least 1")
    if not (ROOT / "app.py").is_file():
        raise ServeError(f"no app.py in {ROOT}: run serve from a checkout of viz-transformer")
    haproxy = find_haproxy(args.haproxy)
    check_port_free(args.address, args.port)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="vt-serve-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    replicas = [Replica(f"r{i + 1}", p) for i, p in enumerate(free_ports(args.replicas))]
    config = run_dir / "haproxy.cfg"
    config.write_text(render(replicas, args.address, args.port, run_dir / "haproxy.sock"))
    check = subprocess.run([haproxy, "-c", "-q", "-f", str(config)], capture_output=True)
    if check.returncode != 0:
        first = (check.stderr or check.stdout).decode(errors="replace").strip().splitlines()
        raise ServeError(f"haproxy refuses {config}: {first[0] if first else 'no reason given'}")
    return haproxy, config, replicas


def run(args: argparse.Namespace) -> int:
    """Start, announce, supervise and stop; returns the exit code."""
    haproxy, config, replicas = prepare(args)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _signum, _frame: stop.set())
    sup = Supervisor(ROOT, config.parent, replicas, (haproxy, config), child_env())
    front = f"http://{args.address}:{args.port}"
    try:
        print(f"serve: starting {len(replicas)} replicas (logs in {config.parent})", flush=True)
        if sup.start(front, args.start_timeout, stop.is_set):
            print(f"serve: {len(replicas)} replicas healthy behind HAProxy: {front}", flush=True)
        while not stop.is_set():
            for restart in sup.poll():
                print(f"serve: {restart.name} exited ({restart.code}); restarted it", flush=True)
            time.sleep(POLL_S)
    except RuntimeError as exc:
        print(f"serve: error: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        stopping = time.monotonic()
        killed = sup.stop()
        late = f" ({', '.join(killed)} killed after {STOP_GRACE_S:.0f} s)" if killed else ""
        print(f"serve: stopped every child in {time.monotonic() - stopping:.1f} s{late}")
    return 0


def main(argv: list[str]) -> int:
    """Entry point of ``python -m viz_transformer serve``."""
    args = parse(argv)
    try:
        return run(args)
    except ServeError as exc:
        print(f"serve: error: {exc}", file=sys.stderr)
        return 2
