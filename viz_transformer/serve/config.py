"""The HAProxy configuration of a classroom, rendered from ``haproxy.cfg.template`` beside this
file, and the checks made before anything starts (haproxy installed, front port free)."""

from __future__ import annotations

import os
import shutil
import socket
import string
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = Path(__file__).with_name("haproxy.cfg.template")
COOKIE = "VTREPLICA"  # the affinity cookie HAProxy inserts (names the replica)
INSTALL = "sudo apt-get install -y haproxy"
RESOLVERS = """
# the replicas' names, asked again of this DNS server (a restarted container's address changes)
resolvers dns
    nameserver dns {dns}
    hold valid 5s
"""
# Debian installs haproxy in /usr/sbin, which an ordinary user's PATH may lack
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])


class ServeError(Exception):
    """A problem the command reports on one line (no traceback)."""


@dataclass(frozen=True)
class Replica:
    """One ``streamlit run`` process behind the proxy: its HAProxy server name and port."""

    name: str
    port: int
    host: str = "127.0.0.1"  # a container's name under compose

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def render(
    replicas: list[Replica], address: str, port: int, stats_socket: Path, dns: str | None = None
) -> str:
    """The HAProxy configuration for ``replicas`` behind ``address:port``.

    Args:
        replicas: the app processes (``serve``: on 127.0.0.1; compose: one per container).
        address: where students connect (127.0.0.1, or 0.0.0.0 for a classroom network).
        port: the front port.
        stats_socket: HAProxy's admin socket (``show stat`` reads each replica's state).
        dns: ``host:port`` of a DNS server that names the replicas (Docker's is
            127.0.0.11:53); each is looked up again as it restarts. None: fixed addresses.
    """
    servers = "\n".join(
        f"    server {r.name} {r.host}:{r.port} check cookie {r.name}" for r in replicas
    )
    fields = {
        "address": address,
        "port": port,
        "cookie": COOKIE,
        "servers": servers,
        "stats_socket": stats_socket,
        "server_options": "",
        "resolvers": "",
    }
    if dns:  # replicas named by a DNS server (compose); a restarted container may change address
        fields["server_options"] = " resolvers dns init-addr last,libc,none"
        fields["resolvers"] = RESOLVERS.format(dns=dns)
    return string.Template(TEMPLATE.read_text()).substitute(fields)


def find_haproxy(explicit: str | None = None) -> str:
    """The haproxy executable: ``explicit`` when given, else the one on PATH or in /usr/sbin.

    Raises:
        ServeError: none found, with the command that installs it.
    """
    found = shutil.which(explicit or "haproxy", path=SEARCH_PATH)
    if found is None:
        where = explicit or "haproxy"
        raise ServeError(f"{where} not found: HAProxy must run in front of the replicas; {INSTALL}")
    return found


def check_port_free(address: str, port: int) -> None:
    """Bind ``address:port`` once to learn whether the front port is free.

    Raises:
        ServeError: it is taken (or not an address of this machine).
    """
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError as exc:
            raise ServeError(
                f"port {port} on {address} is busy or unusable ({exc.strerror}); pick another "
                "with --port"
            ) from None


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (the kernel picks them; all held until chosen)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def main(argv: list[str] | None = None) -> None:
    """Print the config for replicas elsewhere (``deploy/haproxy.cfg`` for compose):
    ``python -m viz_transformer.serve.config app1:8501 app2:8501 --port 8501``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m viz_transformer.serve.config")
    parser.add_argument("servers", nargs="+", help="host:port of each replica")
    parser.add_argument("--address", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--stats-socket", type=Path, default=Path("/tmp/haproxy.sock"))
    parser.add_argument("--dns", default="127.0.0.11:53", help="DNS server naming the replicas")
    args = parser.parse_args(argv)
    hosts = [s.rsplit(":", 1) for s in args.servers]
    replicas = [Replica(h.replace("-", "_"), int(p), h) for h, p in hosts]
    print(render(replicas, args.address, args.port, args.stats_socket, args.dns), end="")


if __name__ == "__main__":
    main()
