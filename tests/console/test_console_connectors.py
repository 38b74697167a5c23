"""The console's "Sources & sinks" view in headless Chromium (issue 32): a WebSocket source added
through its form, listed retrying (an address nobody listens on) or connected (a real publisher),
its counters rising as the publisher sends N-Triples messages; an MQTT declaration as the form
sends it; a declaration the server refuses showing the server's 400 with the field it names
outlined; the sink form offering the registered queries; a name in use replaced, a source removed,
each after a confirmation; the token sent with both. Against the session's mosquitto, an MQTT
source and an MQTT sink added through the forms, counted, publishing, and removed.

What the page shows is checked against the server's own answers (``GET /sources/{name}``,
``GET /sinks/{name}``, the 400 of the same declaration sent over HTTP, the query's own emissions
for what the sink publishes), not against values written here."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from console_page import click, js, open_console, table_rows, wait
from selenium.webdriver.common.alert import Alert
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait
from stored_queries import collect, engine_of, sparql_query
from ws_publisher import Publisher

pytestmark = pytest.mark.slow  # each test starts a browser


@pytest.fixture
def publisher() -> Iterator[Publisher]:
    running = Publisher().start()
    yield running
    running.stop()


@pytest.fixture
def server(endpoint_factory):
    live = endpoint_factory(cache_engine="local")
    yield live
    # The factory's servers live as long as the session: their connectors stop with each test.
    for role in ("sources", "sinks"):
        for connector in live.get(f"/{role}").json()[role]:
            live.delete(f"/{role}/{connector['name']}")


def fill(browser, fields: dict[str, str]) -> None:
    """Sets form fields by id, each followed by the change event the form listens to."""
    for element_id, value in fields.items():
        js(browser, """const field = document.getElementById(arguments[0]);
            field.value = arguments[1];
            field.dispatchEvent(new Event('change', {bubbles: true}));""", element_id, value)


def submit(browser, form_id: str) -> None:
    js(browser, "document.querySelector('#' + arguments[0] + ' button[type=submit]').click()", form_id)


def listed_row(browser, name: str, role: str = "source") -> dict[str, str] | None:
    """The connector's row in its table (``#sources`` or ``#sinks``), by column heading."""
    headings = js(browser, "return Array.from(document.querySelectorAll(`#${arguments[0]}s thead th`)).map(th => th.textContent)", role)
    rows = table_rows(browser, f"#{role}s tbody tr[data-name='{name}']")
    return dict(zip(headings, rows[0], strict=True)) if rows else None


def shown_state(browser, name: str, role: str = "source") -> str | None:
    return js(browser, "const cell = document.querySelector(`#${arguments[1]}s tr[data-name='${arguments[0]}'] td.state`); return cell && cell.dataset.state",
              name, role)


def remove(browser, name: str, role: str = "source") -> Alert:
    """Clicks the connector's Remove button; its confirmation."""
    # Clicked from a timer: the script returns before the confirmation blocks the page.
    js(browser, "const b = document.querySelector(`#${arguments[1]}s tr[data-name='${arguments[0]}'] button`); setTimeout(() => b.click(), 0)",
       name, role)
    return WebDriverWait(browser, 10).until(expected_conditions.alert_is_present())


def shown_counters(browser, name: str) -> tuple[str, ...]:
    """A source's received, accepted and rejected counts, as its row shows them."""
    row = listed_row(browser, name)
    return row["received"], row["accepted"], row["rejected"]


def served_counters(server, name: str) -> tuple[str, ...]:
    """The same counts from ``GET /sources/{name}``, as the row would show them."""
    source = server.get(f"/sources/{name}").json()
    return str(source["received"]), str(source["accepted"]), ", ".join(f"{k} {n}" for k, n in source["rejected"].items())


def reading(i: int) -> str:
    """An N-Triples message: one reading."""
    return f'<http://example.org/s{i}> <http://example.org/t> "{20 + i}"^^<http://www.w3.org/2001/XMLSchema#integer> .'


MALFORMED = "<http://example.org/s> not N-Triples"


def open_connectors(browser, server) -> None:
    open_console(browser, server)
    click(browser, "tab-connectors")
    # The forms' choices come with the settings (/console/settings.json).
    wait(lambda: js(browser, "return document.querySelectorAll('#source-kind option').length") > 0, what="the source kinds")


def test_a_websocket_source_added_listed_counted_and_removed(browser, server, publisher, screenshot):
    open_connectors(browser, server)

    # An address nobody listens on (a publisher never started): listed retrying, with the failure and
    # the wait before the next try.
    fill(browser, {"source-name": "nowhere", "source-kind": "websocket", "source-address": Publisher().url,
                   "source-stream": "obs"})
    submit(browser, "source-form")
    # (While it tries again the countdown is gone: waited for, not read once.)
    wait(lambda: (listed_row(browser, "nowhere") or {}).get("state", "").startswith("retrying, next try in "),
         what="the unreachable source to retry")
    listed = server.get("/sources/nowhere").json()
    assert listed["state"] == "retrying" and listed["reason"]
    assert shown_state(browser, "nowhere") == "retrying" and listed_row(browser, "nowhere")["state"].endswith(listed["reason"])
    assert "added the source nowhere" in js(browser, "return document.getElementById('source-status').textContent")

    # A real publisher: connected, and the declaration the server keeps is the form's.
    fill(browser, {"source-name": "feed", "source-address": publisher.url, "source-stream": "obs",
                   "source-format": "ntriples", "source-time": "arrival"})
    assert js(browser, "return document.getElementById('source-topics').closest('label').hidden") is True  # MQTT only
    submit(browser, "source-form")
    wait(lambda: shown_state(browser, "feed") == "connected", what="the source to connect")
    spec = server.get("/sources/feed").json()["spec"]
    assert {key: spec[key] for key in ("kind", "address", "stream", "format", "time", "topics")} == {
        "kind": "websocket", "address": publisher.url, "stream": "obs", "format": "ntriples", "time": "arrival", "topics": []}
    publisher.wait_for_client()

    # Messages sent: the counters shown rise to the server's own.
    for i in range(2):
        publisher.send(reading(i))
    wait(lambda: shown_counters(browser, "feed") == ("2", "2", ""), what="two messages counted")
    for i in range(2, 5):
        publisher.send(reading(i) + f"\n<http://example.org/s{i}> <http://example.org/u> <http://example.org/v> .")
    publisher.send(MALFORMED)
    wait(lambda: shown_counters(browser, "feed") == ("6", "5", "malformed 1"), what="the later messages counted")
    assert shown_counters(browser, "feed") == served_counters(server, "feed")
    row = listed_row(browser, "feed")
    assert row["stream"] == server.get("/sources/feed").json()["stream"] and row["kind"] == "websocket" and row["address · topics"] == publisher.url
    screenshot("console-connectors", readme=True)

    # Removing asks first: dismissed, the source stays; accepted, it goes from the page and the server.
    alert = remove(browser, "feed")
    assert "Remove the source feed?" in alert.text
    alert.dismiss()
    assert server.get("/sources/feed").status == 200
    remove(browser, "feed").accept()
    wait(lambda: listed_row(browser, "feed") is None, what="the source to leave the list")
    assert server.get("/sources/feed").status == 404
    wait(lambda: "removed the source feed" in js(browser, "return document.getElementById('connectors-status').textContent"),
         what="the removal said")
    assert listed_row(browser, "nowhere") is not None


def test_an_mqtt_source_and_sink_added_counted_and_removed(browser, server, broker, screenshot):
    """Against the session's mosquitto: readings published to a wildcard filter reach a query
    through the source, and the sink publishes each of the query's emissions back to the broker."""
    open_connectors(browser, server)

    # The source: connected, declared as the form says; its stream is where the query will read.
    fill(browser, {"source-name": "mqtt-in", "source-kind": "mqtt", "source-address": broker.address, "source-topics": "console/+/obs",
                   "source-stream": "obs", "source-format": "ntriples", "source-time": "arrival", "source-qos": "1"})
    submit(browser, "source-form")
    wait(lambda: shown_state(browser, "mqtt-in") == "connected", what="the MQTT source to connect")
    source = server.get("/sources/mqtt-in").json()
    assert {key: source["spec"][key] for key in ("kind", "address", "topics", "stream", "format", "time", "qos")} == {
        "kind": "mqtt", "address": broker.address, "topics": ["console/+/obs"], "stream": "obs", "format": "ntriples", "time": "arrival",
        "qos": 1}
    row = listed_row(browser, "mqtt-in")
    assert (row["kind"], row["address · topics"], row["stream"]) == ("mqtt", f"{broker.address} · console/+/obs", source["stream"])

    # A query over that stream, registered while the page is open: the sink form offers it.
    query = f"PREFIX ex: <http://example.org/> SELECT ?s ?v WHERE {{ STREAM <{source['stream']}> [NOW] {{ ?s ex:t ?v }} }}"
    assert sparql_query(server, "readings", query).status == 201
    emitted = collect(engine_of(server).queries["readings"])  # the query's own emissions: what the sink must publish
    wait(lambda: "readings" in js(browser, "return Array.from(document.querySelectorAll('#sink-query option')).map(o => o.value)"),
         what="the new query offered to the sink form")

    subscriber = broker.subscriber("console/results")  # before the sink: no emission goes unseen
    try:
        fill(browser, {"sink-name": "mqtt-out", "sink-kind": "mqtt", "sink-address": broker.address, "sink-topic": "console/results",
                       "sink-query": "readings", "sink-format": "json", "sink-qos": "1"})
        submit(browser, "sink-form")
        wait(lambda: shown_state(browser, "mqtt-out", "sink") == "connected", what="the MQTT sink to connect")
        assert "added the sink mqtt-out" in js(browser, "return document.getElementById('sink-status').textContent")
        row = listed_row(browser, "mqtt-out", "sink")
        assert (row["kind"], row["address · topic"], row["query"], row["format"]) == ("mqtt", f"{broker.address} · console/results",
                                                                                    "readings", "json")

        # A topic outside the filter first (had it been received, it would be counted before the
        # others), then four readings and a malformed message on two topics the filter matches.
        broker.publish("console/hall/other", reading(9))
        broker.publish("console/kitchen/obs", reading(0), reading(1))
        broker.publish("console/hall/obs", reading(2) + "\n<http://example.org/s2> <http://example.org/u> <http://example.org/v> .",
                       MALFORMED, reading(3))
        wait(lambda: shown_counters(browser, "mqtt-in") == ("5", "4", "malformed 1"), what="the MQTT messages counted")
        assert shown_counters(browser, "mqtt-in") == served_counters(server, "mqtt-in")

        # Every emission of the query published, in order, as the count shown says.
        def readings_emitted() -> list[str]:
            return sorted(b["s"]["value"] for e in list(emitted) for b in e.to_json()["results"]["bindings"])

        wait(lambda: readings_emitted() == [f"http://example.org/s{i}" for i in range(4)], what="the query's emissions")

        def published() -> bool:
            shown, served = listed_row(browser, "mqtt-out", "sink"), server.get("/sinks/mqtt-out").json()
            return shown["published"] == str(served["published"]) == str(len(emitted))

        wait(published, what="the sink's published count")
        received = subscriber.take(len(emitted))
        assert [json.loads(message.payload) for message in received] == [emission.to_json() for emission in emitted[:len(received)]]
        row, served = listed_row(browser, "mqtt-out", "sink"), server.get("/sinks/mqtt-out").json()
        assert (row["failed"], row["dropped"]) == (str(served["failed"]), str(served["dropped"])) == ("0", "0")
        screenshot("console-connectors-mqtt")
    finally:
        subscriber.close()

    # Both removed, each after its confirmation.
    for name, role in (("mqtt-out", "sink"), ("mqtt-in", "source")):
        alert = remove(browser, name, role)
        assert f"Remove the {role} {name}?" in alert.text
        alert.accept()
        wait(lambda name=name, role=role: listed_row(browser, name, role) is None, what=f"the {role} to leave the list")
        assert server.get(f"/{role}s/{name}").status == 404
        wait(lambda name=name, role=role: f"removed the {role} {name}" in js(browser, "return document.getElementById('connectors-status').textContent"),
             what="the removal said")


def test_refused_declarations_show_the_servers_message(browser, server):
    text = "PREFIX ex: <http://example.org/> SELECT ?s FROM STREAM <urn:obs> [RANGE 10s] WHERE { ?s ex:p ?o }"
    assert server.put("/queries/watched", body=text, headers={"Content-Type": "application/sparql-query"}).status == 201
    open_connectors(browser, server)
    nowhere = Publisher().url  # never started

    # A time that is neither a choice nor an IRI: the server's 400, the time fields outlined, nothing added.
    fill(browser, {"source-name": "odd", "source-kind": "websocket", "source-address": nowhere, "source-stream": "obs",
                   "source-format": "turtle", "source-time": "predicate"})
    assert js(browser, "return document.getElementById('source-time-predicate').hidden") is False
    fill(browser, {"source-time-predicate": "not an IRI"})
    submit(browser, "source-form")
    wait(lambda: js(browser, "return !document.getElementById('source-error').hidden"), what="the refusal")
    declared = {"kind": "websocket", "address": nowhere, "stream": "obs", "format": "turtle", "time": "not an IRI"}
    refused = server.put("/sources/odd", body=json.dumps(declared), headers={"Content-Type": "application/json"})
    assert refused.status == 400
    assert js(browser, "return document.getElementById('source-error').textContent") == refused.json()["error"]
    assert js(browser, "return document.getElementById('source-status').textContent") == "400"
    outlined = js(browser, "return Array.from(document.querySelectorAll('#source-form .invalid')).map(e => e.id)")
    assert outlined == ["source-time", "source-time-predicate"]
    assert server.get("/sources/odd").status == 404

    # An MQTT source: its topic filters (one a line) and QoS show and are sent, the WebSocket token
    # is not; the declaration sent is read from the page's own request. (The address has no host:
    # refused before the kind's transport is looked for, with or without MQTT in this server.)
    js(browser, """window.sent = [];
        const send = window.fetch;
        window.fetch = (url, options) => { if (options && options.method === 'PUT') window.sent.push(options.body); return send(url, options); };""")
    fill(browser, {"source-name": "broker", "source-kind": "mqtt", "source-address": "mqtt://:1883", "source-stream": "obs",
                   "source-format": "trig", "source-time": "payload", "source-topics": "sensors/+/obs\n\n  plant/# \n",
                   "source-qos": "0", "source-username": "cqels", "source-password-env": "MQTT_PASSWORD", "source-token-env": "IGNORED"})
    shown = js(browser, "return ['source-topics', 'source-qos', 'source-token-env'].map(id => !document.getElementById(id).closest('label').hidden)")
    assert shown == [True, True, False]
    submit(browser, "source-form")
    wait(lambda: js(browser, "return window.sent.length") == 1, what="the MQTT declaration sent")
    declared = json.loads(js(browser, "return window.sent[0]"))
    assert declared == {"kind": "mqtt", "address": "mqtt://:1883", "stream": "obs", "format": "trig", "time": "payload",
                        "topics": ["sensors/+/obs", "plant/#"], "qos": 0, "username": "cqels", "password_env": "MQTT_PASSWORD"}
    refused = server.put("/sources/broker", body=json.dumps(declared), headers={"Content-Type": "application/json"})
    assert refused.status == 400
    wait(lambda: js(browser, "return document.getElementById('source-error').textContent") == refused.json()["error"], what="the refusal")
    assert js(browser, "return Array.from(document.querySelectorAll('#source-form .invalid')).map(e => e.id)") == ["source-address"]

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
    fill(browser, {"source-name": "odd", "source-kind": "websocket", "source-address": nowhere, "source-format": "turtle",
                   "source-time": "payload", "source-username": "", "source-password-env": "", "source-token-env": ""})
    submit(browser, "source-form")
    wait(lambda: listed_row(browser, "odd") is not None, what="the corrected source")
    assert js(browser, "return document.getElementById('source-error').hidden") is True
    assert js(browser, "return document.querySelectorAll('#source-form .invalid').length") == 0

    # The name of a listed source: replacing it is asked first, then its declaration is the form's.
    fill(browser, {"source-format": "ntriples"})
    js(browser, "const b = document.querySelector('#source-form button[type=submit]'); setTimeout(() => b.click(), 0)")
    alert = WebDriverWait(browser, 10).until(expected_conditions.alert_is_present())
    assert "Replace the source odd?" in alert.text
    alert.accept()
    wait(lambda: "replaced the source odd" in js(browser, "return document.getElementById('source-status').textContent"), what="the replacement")
    replaced = server.get("/sources/odd").json()["spec"]
    assert (replaced["format"], replaced["time"], replaced["username"], replaced["token_env"]) == ("ntriples", "payload", None, None)


def test_adding_and_removing_carry_the_token(browser, endpoint_factory):
    guarded = endpoint_factory(cache_engine="local", auth_token="s3cret")
    open_console(browser, guarded)  # the token is kept per origin: set once the page is there
    js(browser, "sessionStorage.setItem('cqels-token', 's3cret')")
    open_connectors(browser, guarded)
    nowhere = Publisher().url  # never started
    fill(browser, {"source-name": "guarded", "source-kind": "websocket", "source-address": nowhere, "source-stream": "obs"})
    submit(browser, "source-form")
    wait(lambda: listed_row(browser, "guarded") is not None, what="the source added with the token")
    assert guarded.get("/sources/guarded").json()["spec"]["address"] == nowhere

    # A wrong token: the server's refusal is shown, nothing changes.
    js(browser, "sessionStorage.setItem('cqels-token', 'wrong')")
    fill(browser, {"source-name": "refused"})
    submit(browser, "source-form")
    wait(lambda: js(browser, "return document.getElementById('source-status').textContent") == "401", what="the refusal")
    assert "bearer token is wrong" in js(browser, "return document.getElementById('source-error').textContent")
    assert guarded.get("/sources/refused").status == 404

    js(browser, "sessionStorage.setItem('cqels-token', 's3cret')")
    remove(browser, "guarded").accept()
    wait(lambda: listed_row(browser, "guarded") is None, what="the source removed with the token")
    assert guarded.get("/sources/guarded").status == 404
