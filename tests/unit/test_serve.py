"""``python -m viz_transformer serve`` before anything starts: the HAProxy config rendered from
the package's template (HAProxy itself accepts it), and one-line errors for a missing haproxy
and a busy port; the health check expects what the installed Streamlit's health route answers.
"""

from __future__ import annotations

import asyncio
import http.server
import re
import socket
import subprocess
import threading

import pytest

from viz_transformer.__main__ import main as vt_main
from viz_transformer.serve import cli
from viz_transformer.serve.config import (
    COOKIE,
    TEMPLATE,
    Replica,
    ServeError,
    check_port_free,
    find_haproxy,
    free_ports,
    render,
)
from viz_transformer.serve.supervisor import healthy

REPLICAS = [Replica("r1", 41001), Replica("r2", 41002)]


def test_the_config_sends_each_replica_its_sessions_and_checks_its_health(tmp_path):
    text = render(REPLICAS, "127.0.0.1", 8501, tmp_path / "haproxy.sock")
    assert TEMPLATE.is_file() and "$" not in text  # every field filled in
    assert "bind 127.0.0.1:8501" in text
    assert f"cookie {COOKIE} insert indirect nocache" in text
    for r in REPLICAS:
        assert f"server {r.name} 127.0.0.1:{r.port} check cookie {r.name}" in text
    assert "option httpchk GET /_stcore/health" in text and "option redispatch" in text
    assert "timeout tunnel 2h" in text  # an open websocket outlives the HTTP timeouts
    # a dead replica (connection refused at once) leaves rotation within 3 s: fall checks,
    # inter ms apart; a busy one gets 3 s per answer and keeps its sessions (60 students on one
    # replica delayed its health answer past 500 ms, and shutdown-sessions then cut all 60)
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("default-server"))
    words = line.split()
    inter_ms = int(words[words.index("inter") + 1].removesuffix("ms"))
    assert inter_ms * int(words[words.index("fall") + 1]) <= 2000
    assert "timeout check 3s" in text and "shutdown-sessions" not in text


@pytest.mark.needs("haproxy")
def test_haproxy_accepts_the_rendered_config(tmp_path):
    config = tmp_path / "haproxy.cfg"
    config.write_text(render(REPLICAS, "0.0.0.0", 8080, tmp_path / "haproxy.sock"))
    check = subprocess.run([find_haproxy(), "-c", "-f", str(config)], capture_output=True)
    assert check.returncode == 0, (check.stdout + check.stderr).decode()


def test_a_missing_haproxy_names_the_install_command():
    with pytest.raises(ServeError, match=r"apt-get install -y haproxy"):
        find_haproxy("/nonexistent/haproxy")


def test_a_busy_port_is_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ServeError, match=f"port {port} on 127.0.0.1 is busy"):
            check_port_free("127.0.0.1", port)
    check_port_free("127.0.0.1", port)  # free again once closed


def test_free_ports_are_distinct():
    ports = free_ports(4)
    assert len(set(ports)) == 4 and all(p > 1024 for p in ports)


@pytest.mark.parametrize("flags", [["--haproxy", "/nonexistent/haproxy"], ["--replicas", "0"]])
def test_the_command_reports_one_line_and_exits_non_zero(flags, capsys, tmp_path):
    code = vt_main(["serve", "--port", str(free_ports(1)[0]), "--run-dir", str(tmp_path), *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("serve: error: ") and err.count("\n") == 1


@pytest.mark.needs("haproxy")
def test_the_command_refuses_a_busy_port(capsys, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert cli.main(["--port", str(port), "--run-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is busy" in err and err.count("\n") == 1


def test_an_unknown_command_prints_the_usage(capsys):
    assert vt_main(["serv"]) == 2
    assert "python -m viz_transformer serve" in capsys.readouterr().err


def streamlit_health(ready: bool) -> tuple[str, int, str]:
    """What the installed Streamlit's own ``/_stcore/health`` route answers: its path, status
    and body, from its handler called with a runtime that accepts sessions (``ready``) or is
    still starting."""
    from starlette.requests import Request
    from streamlit.runtime.runtime import Runtime, RuntimeState
    from streamlit.web.server.starlette.starlette_routes import create_health_routes

    class Runtime_:
        state = _state = RuntimeState.NO_SESSIONS_CONNECTED if ready else RuntimeState.INITIAL
        is_ready_for_browser_connection = Runtime.is_ready_for_browser_connection

    route = next(r for r in create_health_routes(Runtime_(), None) if "GET" in r.methods)
    scope = {"type": "http", "method": "GET", "path": route.path, "headers": [],
             "query_string": b""}  # fmt: skip
    response = asyncio.run(route.endpoint(Request(scope)))
    return route.path, response.status_code, response.body.decode()


def haproxy_passes(config: str, status: int, body: str) -> bool:
    """Whether the rendered config's ``http-check expect`` accepts this answer (HAProxy's
    rules: ``string`` is a case-sensitive substring of the body, ``rstring`` a regex search,
    ``status`` a code, a range or a list of them)."""
    line = next(ln.split() for ln in config.splitlines() if ln.strip().startswith("http-check"))
    assert line[:2] == ["http-check", "expect"], line
    how, what = line[2], " ".join(line[3:])
    checks = {
        "string": lambda: what in body,
        "rstring": lambda: re.search(what, body) is not None,
        "status": lambda: any(
            int(lo) <= status <= int(hi or lo)
            for lo, _, hi in (part.partition("-") for part in what.split(","))
        ),
    }
    return checks[how]()


@pytest.mark.needs("streamlit")
def test_the_health_check_expects_what_streamlit_answers(tmp_path):
    text = render(REPLICAS, "127.0.0.1", 8501, tmp_path / "haproxy.sock")
    path, status, body = streamlit_health(ready=True)
    assert f"option httpchk GET {path}\n" in text
    assert status == 200 and haproxy_passes(text, status, body), (status, body)
    _, status, body = streamlit_health(ready=False)  # a replica still loading stays out
    assert status == 503 and not haproxy_passes(text, status, body), (status, body)


@pytest.mark.needs("streamlit")
@pytest.mark.parametrize("ready", [True, False])
def test_serve_reads_a_replica_healthy_when_streamlit_says_so(ready):
    _, status, body = streamlit_health(ready)

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health) as server:
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        try:
            assert healthy(f"http://127.0.0.1:{server.server_address[1]}") is ready
        finally:
            server.shutdown()
