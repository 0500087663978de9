"""The lesson mode's client: what it reads from a run (the page's hash, the token in the query,
widgets by label, a head grid's pills, feedback) and what a click sends (a button's trigger, a
pill's label, typed text). A fake websocket records what the client sends and answers with a
finished run."""

from __future__ import annotations

import asyncio

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.harness.lesson_ws import feedback
from bench.harness.stats import percentile
from bench.harness.ws import Client


class FakeSocket:
    """Records what the client sends; every send is answered with ``replies`` then the end."""

    def __init__(self, replies: list[ForwardMsg]) -> None:
        self.sent: list[BackMsg] = []
        self.replies = replies
        self.queue: list[bytes] = []

    async def send(self, raw: bytes) -> None:
        msg = BackMsg()
        msg.ParseFromString(raw)
        self.sent.append(msg)
        done = ForwardMsg()
        done.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
        self.queue = [m.SerializeToString() for m in (*self.replies, done)]

    def __aiter__(self) -> FakeSocket:
        return self

    async def __anext__(self) -> bytes:
        if not self.queue:
            raise StopAsyncIteration
        return self.queue.pop(0)


def _element(kind: str, **fields: object) -> ForwardMsg:
    msg = ForwardMsg()
    element = getattr(msg.delta.new_element, kind)
    for name, value in fields.items():
        if name == "options":
            for label in value:  # type: ignore[union-attr]
                element.options.add(content=label)
        else:
            setattr(element, name, value)
    return msg


def _run(client: Client, *args: object) -> None:
    asyncio.run(client.click(*args) if args else client.run())  # type: ignore[arg-type]


def test_a_run_is_read_for_the_page_the_token_widgets_pills_and_feedback():
    nav, info = ForwardMsg(), ForwardMsg()
    nav.navigation.page_script_hash = "abc"
    info.page_info_changed.query_string = "class=K7QX2M&student=tok"
    early = ForwardMsg()
    early.script_finished = ForwardMsg.FINISHED_EARLY_FOR_RERUN  # the run goes on after this
    replies = [nav, early, info, _element("button", id="b1", label="Next"),
               _element("text_input", id="t1", label="Your name"),
               _element("button_group", id="g0", options=["L0 H0", "L0 H1"]),
               _element("heading", body="Multi-head attention"),
               _element("alert", body="Your answer: **L0 H1**  \nRight: ...", format=4),
               ]  # fmt: skip
    client = Client(FakeSocket(replies), "class=K7QX2M")  # type: ignore[arg-type]
    _run(client)
    assert client.page_hash == "abc" and client.query == "class=K7QX2M&student=tok"
    assert client.widgets == {"Next": "b1", "Your name": "t1"}
    assert client.pills == {"L0 H0": "g0", "L0 H1": "g0"}
    assert client.headings == ["Multi-head attention"]
    assert feedback(client) == "Your answer: **L0 H1**  \nRight: ..."


def test_a_click_sends_a_trigger_a_pill_label_or_typed_text_with_the_page():
    client = Client(FakeSocket([]), "class=K7QX2M&student=tok", page_hash="abc")  # type: ignore[arg-type]
    client.widgets = {"Join": "b1", "Your name": "t1"}
    client.pills = {"L1 H3": "g1"}
    _run(client, "Join", {"Your name": "Ada"})
    _run(client, "L1 H3")
    join, head = client.ws.sent  # type: ignore[attr-defined]
    assert join.rerun_script.page_name == "lesson" and join.rerun_script.page_script_hash == "abc"
    assert join.rerun_script.query_string == "class=K7QX2M&student=tok"
    states = {w.id: w for w in join.rerun_script.widget_states.widgets}
    assert states["b1"].trigger_value and states["t1"].string_value == "Ada"
    [pill] = head.rerun_script.widget_states.widgets
    assert pill.id == "g1" and list(pill.string_array_value.data) == ["L1 H3"]
    with pytest.raises(KeyError):
        _run(client, "L9 H9")  # a head the page did not draw


def test_an_error_message_is_not_feedback_and_percentiles_are_nearest_rank():
    client = Client(FakeSocket([_element("alert", body="Database down", format=1)]), "")  # type: ignore[arg-type]
    _run(client)
    assert feedback(client) is None and client.alerts == [("1", "Database down")]
    assert percentile([0.1, 0.2, 0.3, 0.4], 50) == 0.2
    assert percentile([0.1, 0.2, 0.3, 0.4], 95) == 0.4
    assert percentile([], 50) == float("inf")
