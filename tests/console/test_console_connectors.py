"""The console's "Sources & sinks" view in headless Chromium (issue 32): a WebSocket source added
through its form, listed retrying (an address nobody listens on) or connected (a real publisher),
its counters rising as the publisher sends N-Triples messages; a declaration the server refuses
showing the server's 400 with the field it names outlined; the sink form offering the registered
queries; a source removed after the confirmation.

What the page shows is checked against the server's own answers (``GET /sources/{name}``, the 400
of the same declaration sent over HTTP), not against values written here."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest
from console_page import click, js, open_console, table_rows, wait
from selenium.webdriver.common.alert import Alert
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait
from websockets.sync.server import ServerConnection, serve

pytestmark = pytest.mark.slow  # each test starts a browser

# The columns of the sources table (index.html).
NAME, KIND, WHERE, STREAM, FORMAT, STATE, RECEIVED, ACCEPTED, REJECTED, LATE, LAG = range(11)


class Publisher:
    """A WebSocket publisher on a free port: ``send(text)`` goes to every client connected."""

    def __init__(self) -> None:
        self._server = serve(self._handle, "127.0.0.1", 0)
        self.address = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}/obs"
        self.clients: list[ServerConnection] = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _handle(self, connection: ServerConnection) -> None:
        self.clients.append(connection)
        connection.wait_closed()  # the handler's return would close the connection

    def send(self, text: str) -> None:
        for client in self.clients:
            client.send(text)

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(5)


@pytest.fixture
def publisher() -> Iterator[Publisher]:
    running = Publisher()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def server(endpoint_factory):
    live = endpoint_factory(cache_engine="local")
    yield live
    # The factory's servers live as long as the session: their connectors stop with each test.
    for role in ("sources", "sinks"):
        for connector in live.get(f"/{role}").json()[role]:
            live.delete(f"/{role}/{connector['name']}")


def closed_port() -> int:
    """A port nothing listens on (the system's free one, released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fill(browser, fields: dict[str, str]) -> None:
    """Sets form fields by id, each followed by the change event the form listens to."""
    for element_id, value in fields.items():
        js(browser, """const field = document.getElementById(arguments[0]);
            field.value = arguments[1];
            field.dispatchEvent(new Event('change', {bubbles: true}));""", element_id, value)


def submit(browser, form_id: str) -> None:
    js(browser, "document.querySelector('#' + arguments[0] + ' button[type=submit]').click()", form_id)


def source_row(browser, name: str) -> list[str] | None:
    rows = table_rows(browser, f"#sources tbody tr[data-name='{name}']")
    return rows[0] if rows else None


def shown_state(browser, name: str) -> str | None:
    return js(browser, "const cell = document.querySelector(`#sources tr[data-name='${arguments[0]}'] td.state`); return cell && cell.dataset.state",
              name)


def open_connectors(browser, server) -> None:
    open_console(browser, server)
    click(browser, "tab-connectors")
    # The forms' choices come with the settings (/console/settings.json).
    wait(lambda: js(browser, "return document.querySelectorAll('#source-kind option').length") > 0, what="the source kinds")


def test_a_websocket_source_added_listed_counted_and_removed(browser, server, publisher, screenshot):
    open_connectors(browser, server)

    # An address nobody listens on: listed retrying, with the failure and the wait before the next try.
    fill(browser, {"source-name": "nowhere", "source-kind": "websocket", "source-address": f"ws://127.0.0.1:{closed_port()}/",
                   "source-stream": "obs"})
    submit(browser, "source-form")
    wait(lambda: shown_state(browser, "nowhere") == "retrying", what="the unreachable source to retry")
    listed = server.get("/sources/nowhere").json()
    assert listed["state"] == "retrying" and listed["reason"]
    row = source_row(browser, "nowhere")
    assert row[STATE].startswith("retrying, next try in ") and row[STATE].endswith(listed["reason"])
    assert "added the source nowhere" in js(browser, "return document.getElementById('source-status').textContent")

    # A real publisher: connected, and the declaration the server keeps is the form's.
    fill(browser, {"source-name": "feed", "source-address": publisher.address, "source-stream": "obs",
                   "source-format": "ntriples", "source-time": "arrival"})
    assert js(browser, "return document.getElementById('source-topics').closest('label').hidden") is True  # MQTT only
    submit(browser, "source-form")
    wait(lambda: shown_state(browser, "feed") == "connected", what="the source to connect")
    spec = server.get("/sources/feed").json()["spec"]
    assert {key: spec[key] for key in ("kind", "address", "stream", "format", "time", "topics")} == {
        "kind": "websocket", "address": publisher.address, "stream": "obs", "format": "ntriples", "time": "arrival", "topics": []}
    wait(lambda: publisher.clients, what="the publisher to see the source")

    # Messages sent: the counters shown rise to the server's own.
    def shown_counters() -> tuple[str, ...]:
        row = source_row(browser, "feed")
        return row[RECEIVED], row[ACCEPTED], row[REJECTED]

    def served_counters() -> tuple[str, ...]:
        source = server.get("/sources/feed").json()
        return str(source["received"]), str(source["accepted"]), ", ".join(f"{k} {n}" for k, n in source["rejected"].items())

    for i in range(2):
        publisher.send(f"<http://example.org/s{i}> <http://example.org/t> {20 + i} .")
    wait(lambda: shown_counters() == ("2", "2", ""), what="two messages counted")
    for i in range(2, 5):
        publisher.send(f"<http://example.org/s{i}> <http://example.org/t> {20 + i} .\n<http://example.org/s{i}> <http://example.org/u> 1 .")
    publisher.send("<http://example.org/s> not N-Triples")
    wait(lambda: shown_counters() == ("6", "5", "malformed 1"), what="the later messages counted")
    assert shown_counters() == served_counters()
    row = source_row(browser, "feed")
    assert row[STREAM] == server.get("/sources/feed").json()["stream"] and row[KIND] == "websocket" and row[WHERE] == publisher.address
    screenshot("console-connectors", readme=True)

    # Removing asks first: dismissed, the source stays; accepted, it goes from the page and the server.
    def remove(name: str) -> Alert:
        # Clicked from a timer: the script returns before the confirmation blocks the page.
        js(browser, "const b = document.querySelector(`#sources tr[data-name='${arguments[0]}'] button`); setTimeout(() => b.click(), 0)", name)
        return WebDriverWait(browser, 10).until(expected_conditions.alert_is_present())

    alert = remove("feed")
    assert "Remove the source feed?" in alert.text
    alert.dismiss()
    assert server.get("/sources/feed").status == 200
    remove("feed").accept()
    wait(lambda: source_row(browser, "feed") is None, what="the source to leave the list")
    assert server.get("/sources/feed").status == 404
    wait(lambda: "removed the source feed" in js(browser, "return document.getElementById('connectors-status').textContent"),
         what="the removal said")
    assert source_row(browser, "nowhere") is not None


def test_refused_declarations_show_the_servers_message(browser, server):
    text = "PREFIX ex: <http://example.org/> SELECT ?s FROM STREAM <urn:obs> [RANGE 10s] WHERE { ?s ex:p ?o }"
    assert server.put("/queries/watched", body=text, headers={"Content-Type": "application/sparql-query"}).status == 201
    open_connectors(browser, server)

    # A time that is neither a choice nor an IRI: the server's 400, the time fields outlined, nothing added.
    fill(browser, {"source-name": "odd", "source-kind": "websocket", "source-address": "ws://127.0.0.1:9/", "source-stream": "obs",
                   "source-format": "turtle", "source-time": "predicate"})
    assert js(browser, "return document.getElementById('source-time-predicate').hidden") is False
    fill(browser, {"source-time-predicate": "not an IRI"})
    submit(browser, "source-form")
    wait(lambda: js(browser, "return !document.getElementById('source-error').hidden"), what="the refusal")
    declared = {"kind": "websocket", "address": "ws://127.0.0.1:9/", "stream": "obs", "format": "turtle", "time": "not an IRI"}
    refused = server.put("/sources/odd", body=json.dumps(declared), headers={"Content-Type": "application/json"})
    assert refused.status == 400
    assert js(browser, "return document.getElementById('source-error').textContent") == refused.json()["error"]
    assert js(browser, "return document.getElementById('source-status').textContent") == "400"
    outlined = js(browser, "return Array.from(document.querySelectorAll('#source-form .invalid')).map(e => e.id)")
    assert outlined == ["source-time", "source-time-predicate"]
    assert server.get("/sources/odd").status == 404

    # The sink form offers the registered queries; a topic with a wildcard is refused the same way.
    assert js(browser, "return Array.from(document.querySelectorAll('#sink-query option')).map(o => o.value)") == [
        q["name"] for q in server.get("/queries").json()["queries"]]
    fill(browser, {"sink-name": "alerts", "sink-address": "mqtt://127.0.0.1:1883", "sink-topic": "results/#", "sink-query": "watched",
                   "sink-overflow": "drop-newest", "sink-buffer": "50"})
    submit(browser, "sink-form")
    wait(lambda: js(browser, "return !document.getElementById('sink-error').hidden"), what="the sink's refusal")
    declared = {"kind": "mqtt", "address": "mqtt://127.0.0.1:1883", "topic": "results/#", "query": "watched", "format": "json",
                "qos": 1, "buffer": 50, "overflow": "drop-newest"}
    refused = server.put("/sinks/alerts", body=json.dumps(declared), headers={"Content-Type": "application/json"})
    assert refused.status == 400
    assert js(browser, "return document.getElementById('sink-error').textContent") == refused.json()["error"]
    assert js(browser, "return Array.from(document.querySelectorAll('#sink-form .invalid')).map(e => e.id)") == ["sink-topic"]

    # Corrected, the source's refusal clears (the address is unreachable: it is added, retrying).
    fill(browser, {"source-time": "payload"})
    submit(browser, "source-form")
    wait(lambda: source_row(browser, "odd") is not None, what="the corrected source")
    assert js(browser, "return document.getElementById('source-error').hidden") is True
    assert js(browser, "return document.querySelectorAll('#source-form .invalid').length") == 0
