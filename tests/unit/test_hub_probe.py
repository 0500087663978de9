"""An hf: model outside the local cache on a server that cannot reach the hub: refused in
seconds, with one message, instead of waiting out the hub client's retries."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from huggingface_hub import constants

from viz_transformer.models.hf import names


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch):
    """Point the hub at ``http://127.0.0.1:<port>`` (set by the test), answers not remembered."""

    def use(port: int) -> None:
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
        monkeypatch.setattr(names, "_HUB_SEEN", {})

    return use


def test_a_listening_hub_is_reachable_and_a_closed_port_is_not(endpoint):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        endpoint(port)
        assert names.hub_reachable()
    endpoint(port)  # closed now: refused
    assert not names.hub_reachable()


def test_a_hub_that_hangs_counts_as_unreachable_after_the_timeout(endpoint, monkeypatch):
    endpoint(443)
    hung = threading.Event()

    def hang(*args: object, **kwargs: object) -> socket.socket:
        hung.wait(5)  # a host that never answers (set below, so the probe ends with the test)
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", hang)
    start = time.monotonic()
    assert not names.hub_reachable(timeout=0.3)
    assert time.monotonic() - start < 1.5
    hung.set()


def test_offline_first_refuses_at_once_with_one_message_when_the_hub_is_unreachable(
    endpoint, monkeypatch
):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        endpoint(closed.getsockname()[1])
    calls: list[bool] = []

    def load(local: bool) -> None:
        calls.append(local)
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")

    with pytest.raises(ValueError) as err:
        names.offline_first("someone/some-model", load)
    assert calls == [True]  # the hub was never asked: no retries to wait out
    text = str(err.value)
    assert text.count("reach") == 1 and "connect" not in text
    assert "hf download someone/some-model" in text
