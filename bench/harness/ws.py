"""A Streamlit session over websockets, no browser: ``Client`` asks for runs of a page (with
clicks and typed text, or of an auto-rerun fragment) and keeps what the last run drew;
``ws_url`` is the websocket of the app at a URL."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection


def ws_url(url: str) -> str:
    """The websocket of the Streamlit app at ``url``."""
    return url.replace("http", "ws", 1).rstrip("/") + "/_stcore/stream"


@dataclass
class Client:
    """One student's session: what its last run drew (widget ids by label, headings, alerts)."""

    ws: ClientConnection
    query: str
    page: str = "lesson"
    page_hash: str = ""
    widgets: dict[str, str] = field(default_factory=dict)  # label -> widget id
    pills: dict[str, str] = field(default_factory=dict)  # an option's label -> its row's id
    headings: list[str] = field(default_factory=list)
    alerts: list[tuple[str, str]] = field(default_factory=list)  # (format, body)
    exceptions: list[str] = field(default_factory=list)
    charts: int = 0  # plotly charts the last run drew
    fragments: dict[str, float] = field(default_factory=dict)  # auto-rerun fragment -> seconds

    async def run(self, states: Sequence[WidgetState] = (), fragment: str = "") -> None:
        """Ask for a run of the page (with ``states``: the clicked button, the typed name), or
        of one of its fragments as a browser's timer does (``fragment``: its id in
        ``fragments``), and read until it ends (a fragment's ``st.rerun()``: until the page's
        run it asks for ends)."""
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = self.page
        msg.rerun_script.page_script_hash = self.page_hash
        msg.rerun_script.widget_states.widgets.extend(states)
        if fragment:
            msg.rerun_script.fragment_id = fragment
            msg.rerun_script.is_auto_rerun = True
        self.headings, self.alerts, self.exceptions, self.charts = [], [], [], 0
        await self.ws.send(msg.SerializeToString())
        async for raw in self.ws:
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            if self._observe(fwd):
                return

    def _observe(self, msg: ForwardMsg) -> bool:
        kind = msg.WhichOneof("type")
        if kind == "navigation":  # the page app.py's navigation ran: ask for it again
            self.page_hash = msg.navigation.page_script_hash
        elif kind == "auto_rerun":  # a fragment with run_every: the browser reruns it
            self.fragments[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string  # the token, once joined
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            which = element.WhichOneof("type")
            if which in ("button", "text_input"):
                widget = getattr(element, which)
                self.widgets[widget.label] = widget.id
            elif which == "button_group":
                group = element.button_group
                self.pills.update({o.content: group.id for o in group.options})
            elif which == "heading":
                self.headings.append(element.heading.body)
            elif which == "alert":
                self.alerts.append((str(element.alert.format), element.alert.body))
            elif which == "plotly_chart":
                self.charts += 1
            elif which == "exception":
                self.exceptions.append(element.exception.message)
        elif kind == "script_finished":
            return msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN
        return False

    async def click(self, label: str, typed: dict[str, str] | None = None) -> None:
        """Click the button or pill ``label`` (with text inputs ``typed``: label -> text)."""
        if label in self.pills:  # a pill's value on the wire: its label
            states = [WidgetState(id=self.pills[label])]
            states[0].string_array_value.data.append(label)
        else:
            states = [WidgetState(id=self.widgets[label], trigger_value=True)]
        states += [
            WidgetState(id=self.widgets[k], string_value=v) for k, v in (typed or {}).items()
        ]
        await self.run(states)
