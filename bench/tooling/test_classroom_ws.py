"""The protocol load driver's own checks: a session that sees another session's sentence, an
exception, or no chart of its own is an error; a run that is cut short for a rerun is not over.
A fake Streamlit server (a websocket speaking ForwardMsg) proves the whole client path catches
a mixed-up reply."""

from __future__ import annotations

import asyncio
import json
import urllib.parse

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.server import serve

from bench.harness.stats import percentile
from bench.harness.ws_classroom import Session, observe, rerun_request, run_all, sentences


def _chart(*labels: str) -> ForwardMsg:
    msg = ForwardMsg()
    fig = {"data": [{"type": "heatmap", "x": list(labels), "y": list(labels)}], "layout": {}}
    msg.delta.new_element.plotly_chart.spec = json.dumps(fig)
    return msg


def _finished(status: int = ForwardMsg.FINISHED_SUCCESSFULLY) -> ForwardMsg:
    msg = ForwardMsg()
    msg.script_finished = status
    return msg


def test_the_request_carries_the_sentence_and_page():
    msg = BackMsg()
    msg.ParseFromString(rerun_request("We talked about the garden all evening."))
    query = urllib.parse.parse_qs(msg.rerun_script.query_string)
    assert query["sentence"] == ["We talked about the garden all evening."]
    assert query["model"] == ["paper-en-pt"]
    assert msg.rerun_script.page_name == "attention_maps"


def test_a_chart_of_its_own_sentence_then_the_end_is_a_good_run():
    s = Session("garden", "We talked about the garden all evening.")
    assert not observe(s, _chart("We", "talked", "about", "the", "garden"), {"kitchen"})
    assert observe(s, _finished(), {"kitchen"})
    assert s.saw_own and s.errors == []


def test_another_sessions_sentence_is_caught():
    s = Session("garden", "We talked about the garden all evening.")
    observe(s, _chart("garden"), {"kitchen", "window"})
    observe(s, _chart("My", "friend", "found", "the", "kitchen"), {"kitchen", "window"})
    assert observe(s, _finished(), {"kitchen", "window"})
    assert s.errors == ["a chart holds another session's sentence (kitchen)"]


def test_an_exception_and_a_run_without_its_sentence_are_caught():
    s = Session("garden", "We talked about the garden all evening.")
    exc = ForwardMsg()
    exc.delta.new_element.exception.message = "boom"
    observe(s, exc, set())
    assert not observe(s, _finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN), set())  # goes on
    assert observe(s, _finished(), set())
    assert s.errors == ["the app showed an exception: boom",
                        "the run finished without a chart of its own sentence"]  # fmt: skip


def test_sentences_differ_and_percentiles_are_nearest_rank():
    sessions = sentences(60)
    assert len({s.marker for s in sessions}) == len({s.sentence for s in sessions}) == 60
    assert percentile([3.0, 1.0, 2.0, 4.0], 50) == 2.0
    assert percentile([3.0, 1.0, 2.0, 4.0], 95) == 4.0


def test_a_server_that_mixes_sessions_up_is_caught_through_the_websocket():
    """The fake server answers every session with the first session's sentence."""
    sessions = sentences(3)

    async def reply(ws) -> None:
        request = BackMsg()
        request.ParseFromString(await ws.recv())
        assert request.rerun_script.page_name == "attention_maps"
        words = sessions[0].sentence.rstrip(".").split()
        await ws.send(_chart(*words).SerializeToString())
        await ws.send(_finished().SerializeToString())
        await ws.wait_closed()

    async def drive() -> None:
        async with serve(reply, "127.0.0.1", 0, subprotocols=["streamlit"]) as server:
            port = server.sockets[0].getsockname()[1]
            await run_all(f"http://127.0.0.1:{port}", sessions, timeout=20)

    asyncio.run(drive())
    assert sessions[0].ok
    for s in sessions[1:]:
        assert not s.ok and s.seconds is None
        assert s.errors == [
            f"a chart holds another session's sentence ({sessions[0].marker})",
            "the run finished without a chart of its own sentence",
        ]
