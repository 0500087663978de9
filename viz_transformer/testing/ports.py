"""A free loopback port for a server that a test or a benchmark starts (Jupyter, PostgreSQL,
Streamlit). The library's own, for ``serve``'s replicas, is ``serve.config.free_ports``, which
ranks above ``testing/`` and is not imported here."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 that the kernel says is free (released at once: another process may
    take it before the server binds, which the callers' start-up checks would show)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
