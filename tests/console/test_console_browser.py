"""The web console end to end in headless Chromium (issue 18): a one-shot query with paging and a
download, conference Q2 registered, events pushed over HTTP and its rows appearing live, the plan
with counters that move, a syntax error marked at its line and column, the query deleted; a
template's instance started from its form; graphs and streams in the data view; the bearer token;
``cqels serve --demo`` opening on the demo query's live rows and moving plan.

What the page shows is checked against the server's own answers (the same query over HTTP, the
recompute oracle of the same continuous query), not against values written here."""

from __future__ import annotations

import json
import time
import urllib.parse

import pyoxigraph as ox
import pytest
from console_page import click, js, open_console, set_editor, table_rows, wait
from paths import ROOT

from cqels_endpoint.http.context import endpoint

pytestmark = pytest.mark.slow  # each test starts a browser

FLOORPLAN = ROOT / "examples" / "data" / "floorplan.trig"
Q2 = (ROOT / "examples" / "queries" / "conference-q2-reachable.rq").read_text(encoding="utf-8")
TEMPLATE = (ROOT / "examples" / "queries" / "template-where-is.rq").read_text(encoding="utf-8")
LV = "http://deri.org/floorplan/"
RFID = "http://deri.org/streams/rfid"
ROOMS = ["mainHall", "corridor", "lobby", "kitchen"]


def push(server, i: int, at: int) -> None:
    body = f"<http://example.org/people/p{i % 5}> <{LV}detectedAt> <{LV}{ROOMS[i % len(ROOMS)]}> ."
    response = server.post(f"/streams/{urllib.parse.quote(RFID, safe='')}", body=body,
                           params={"time": str(at)}, headers={"Content-Type": "application/n-triples"})
    assert response.status == 200, response.text


@pytest.fixture
def server(endpoint_factory):
    live = endpoint_factory(cache_engine="local", keepalive_s=0.5)
    live.store.load(FLOORPLAN.read_bytes(), media_type="application/trig")
    return live


def test_query_register_watch_explain_and_delete(browser, server, screenshot):
    open_console(browser, server)

    # An update goes to /update; then a one-shot SELECT: the table is the server's answer, paged
    # by 50, downloadable.
    update = "INSERT DATA { " + " ".join(f"<urn:n{i}> <urn:v> {i} ." for i in range(120)) + " }"
    set_editor(browser, "query-editor", update)
    click(browser, "run-query")
    wait(lambda: "update done" in js(browser, "return document.getElementById('query-status').textContent"), what="the update")
    select = "SELECT ?s ?v WHERE { ?s <urn:v> ?v } ORDER BY ?v"
    expected = server.query(select).json()["results"]["bindings"]
    assert len(expected) == 120
    set_editor(browser, "query-editor", select)
    click(browser, "run-query")
    wait(lambda: table_rows(browser, "#result-table tbody tr"), what="the result table")
    first_page = table_rows(browser, "#result-table tbody tr")
    assert len(first_page) == 50
    assert first_page[0][0] == f"<{expected[0]['s']['value']}>"
    pages = -(-len(expected) // 50)
    assert js(browser, "return document.getElementById('page-label').textContent") == f"page 1 of {pages} ({len(expected)} rows)"
    click(browser, "page-next")
    assert table_rows(browser, "#result-table tbody tr")[0][0] == f"<{expected[50]['s']['value']}>"
    accepts = js(browser, "return Array.from(document.querySelectorAll('#download-links button')).map(b => b.dataset.accept)")
    assert set(accepts) == {"application/sparql-results+json", "application/sparql-results+xml", "text/csv", "text/tab-separated-values"}
    js(browser, "document.querySelector('#download-links button[data-accept=\"text/csv\"]').click()")
    wait(lambda: "downloaded results.csv" in js(browser, "return document.getElementById('query-status').textContent"), what="the download")
    screenshot("console-query")

    # Conference Q2 registered from the console.
    click(browser, "tab-continuous")
    js(browser, "document.getElementById('cq-name').value = 'q2'")
    set_editor(browser, "cq-editor", Q2)
    click(browser, "cq-register")
    wait(lambda: table_rows(browser, "#cq-list tbody tr[data-name='q2']"), what="q2 in the list")
    engine = endpoint(server.app).engine
    assert "q2" in engine.queries
    oracle: list[dict] = []
    engine.register(Q2, name="q2-oracle", mode="recompute").subscribe(lambda emission: oracle.append(emission.to_json()))
    wait(lambda: js(browser, "return document.getElementById('live-head').textContent").startswith("waiting"), what="the results stream")
    time.sleep(0.5)  # the EventSource subscribes: emissions made before would not be streamed

    # Events pushed over HTTP: the rows the console shows are the oracle's triples.
    start = int(time.time() * 1000)
    for i in range(8):
        push(server, i, start + i * 700)
        time.sleep(0.2)  # spread over a few seconds, as a live feed is
    expected_triples = sorted(line for emission in oracle for line in emission["triples"].splitlines() if line)
    assert expected_triples
    wait(lambda: len(table_rows(browser, "#live-rows tbody tr")) == len(expected_triples), what="the live rows")
    shown = sorted(row[1] for row in table_rows(browser, "#live-rows tbody tr"))
    assert shown == expected_triples
    # Both charts drawn from what happened: emissions counted here, engine time from /queries/q2.
    wait(lambda: float(js(browser, "return document.getElementById('chart-rate').dataset.total || '0'")) == len(oracle),
         what="the emission chart")
    wait(lambda: float(js(browser, "return document.getElementById('chart-latency').dataset.max || '0'")) > 0, what="the latency chart")
    screenshot("console-live", readme=True)

    # The plan: a tree of operators whose counters move as events come.
    click(browser, "subtab-plan")
    wait(lambda: js(browser, "return document.querySelectorAll('#plan-tree .node').length") >= 3, what="the plan tree")
    inputs = "return Array.from(document.querySelectorAll('#plan-tree .counter[data-counter=\"inputs\"] b')).map(b => b.textContent).join(',')"
    before = js(browser, inputs)
    assert before
    for i in range(8, 12):
        push(server, i, start + i * 700)
    wait(lambda: js(browser, inputs) != before, what="the plan's counters to refresh")
    screenshot("console-plan", readme=True)

    # A syntax error is marked at its line and column.
    click(browser, "cq-new")
    js(browser, "document.getElementById('cq-name').value = 'broken'")
    set_editor(browser, "cq-editor", "PREFIX lv: <http://deri.org/floorplan/>\nSELECT ?p\nWHERE { STREAM <http://s> [RANGE 3s] { ?p lv:at ?l } FILTER( }")
    click(browser, "cq-register")
    wait(lambda: js(browser, "return !document.getElementById('cq-error').hidden"), what="the error")
    assert js(browser, "return document.getElementById('cq-error').dataset.line") == "3"
    column = int(js(browser, "return document.getElementById('cq-error').dataset.column"))
    assert column == len("WHERE { STREAM <http://s> [RANGE 3s] { ?p lv:at ?l } FILTER( ") + 1
    marked = js(browser, """const cm = document.getElementById('cq-editor').cm;
        return [cm.lineInfo(2).bgClass, document.querySelectorAll('.cm-error-mark').length]""")
    assert marked == ["cm-error-line", 1]
    assert "broken" not in engine.queries
    screenshot("console-syntax-error")

    # Edited: saved under its name with the new text; an edit that does not parse leaves it running.
    js(browser, "document.querySelector(\"#cq-list tbody tr[data-name='q2']\").click()")
    wait(lambda: not js(browser, "return document.getElementById('cq-delete').disabled"), what="q2 selected")
    set_editor(browser, "cq-editor", Q2.replace("[RANGE 3s]", "[RANGE 5s]"))
    click(browser, "cq-register")
    wait(lambda: "[RANGE 5s]" in server.get("/queries/q2").json()["text"], what="the edit to be saved")
    wait(lambda: js(browser, "return document.getElementById('cq-status').textContent") == "running", what="q2 to run again")
    set_editor(browser, "cq-editor", Q2.replace("[RANGE 3s]", "[RANGE 5s"))
    click(browser, "cq-register")
    wait(lambda: "previous text keeps running" in js(browser, "return document.getElementById('cq-status').textContent"),
         what="the refused edit")
    assert "[RANGE 5s]" in server.get("/queries/q2").json()["text"] and server.get("/queries/q2").json()["status"] == "running"

    # Deleted from the console.
    click(browser, "cq-delete")
    wait(lambda: not table_rows(browser, "#cq-list tbody tr[data-name='q2']"), what="q2 to leave the list")
    assert "q2" not in engine.queries


def test_template_instance_started_from_its_form(browser, server):
    open_console(browser, server)
    click(browser, "tab-continuous")
    js(browser, "document.getElementById('cq-name').value = 'where'")
    set_editor(browser, "cq-editor", TEMPLATE)
    click(browser, "cq-register")
    wait(lambda: js(browser, "return !document.getElementById('instance-form').hidden"), what="the parameter form")
    parameters = js(browser, "return Array.from(document.querySelectorAll('[data-parameter]')).map(i => i.dataset.parameter)")
    assert parameters == server.get("/queries/where").json()["parameters"] == ["person"]
    js(browser, "document.querySelector('[data-parameter]').value = 'http://example.org/people/p1'")
    js(browser, "document.getElementById('instance-name').value = 'alice'")
    click(browser, "subtab-instances")
    js(browser, "document.querySelector('#instance-form button').click()")
    wait(lambda: table_rows(browser, "#instance-list tbody tr"), what="the instance")
    (row,) = table_rows(browser, "#instance-list tbody tr")
    assert row[0] == "alice" and "<http://example.org/people/p1>" in row[1]
    details = server.get("/queries/where").json()
    assert [i["name"] for i in details["instances"]] == ["alice"]


def test_data_view_uploads_lists_and_pushes(browser, server, tmp_path):
    open_console(browser, server)
    click(browser, "tab-data")
    wait(lambda: table_rows(browser, "#graphs tbody tr"), what="the graphs")
    listed = {row[0]: row[1] for row in table_rows(browser, "#graphs tbody tr")}
    counted = server.query("SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g").json()["results"]["bindings"]
    for binding in counted:
        assert listed[f"<{binding['g']['value']}>"] == binding["n"]["value"]

    upload = tmp_path / "extra.ttl"
    upload.write_text("<urn:a> <urn:p> 1 , 2 , 3 .\n", encoding="utf-8")
    js(browser, "document.getElementById('upload-graph').value = 'urn:uploaded'")
    browser.find_element("id", "upload-file").send_keys(str(upload))
    js(browser, "document.querySelector('#upload-form button').click()")
    wait(lambda: ["<urn:uploaded>", "3", "Delete"] in table_rows(browser, "#graphs tbody tr"), what="the uploaded graph")
    stored = server.get("/store", params={"graph": "urn:uploaded"}, headers={"Accept": "application/n-triples"})
    assert stored.status == 200 and len(stored.text.splitlines()) == 3

    js(browser, "document.getElementById('push-stream').value = 'Readings'")
    js(browser, "document.getElementById('push-time').value = '1000'")
    js(browser, "document.getElementById('push-body').value = '<urn:s1> <urn:t> 21 .'")
    js(browser, "document.querySelector('#push-form button').click()")
    stream = endpoint(server.app).config.stream_base + "Readings"
    wait(lambda: table_rows(browser, f"#streams tbody tr[data-stream='{stream}']"), what="the stream")
    (row,) = table_rows(browser, f"#streams tbody tr[data-stream='{stream}']")
    listed_stream = next(s for s in server.get("/streams").json()["streams"] if s["stream"] == stream)
    assert row[1] == str(listed_stream["latest"]) == "1000" and row[4] == str(listed_stream["accepted"]) == "1"

    js(browser, "document.querySelector(\"#graphs tbody tr[data-graph='urn:uploaded'] button\").click()")
    wait(lambda: not table_rows(browser, "#graphs tbody tr[data-graph='urn:uploaded']"), what="the graph to go")
    assert server.get("/store", params={"graph": "urn:uploaded"}).status == 404


def test_without_the_token_the_console_is_read_only(browser, endpoint_factory):
    server = endpoint_factory(cache_engine="local", auth_token="s3cret")
    open_console(browser, server)
    wait(lambda: js(browser, "return document.getElementById('auth-state').textContent") == "read-only (sign in to write)",
         what="the read-only state")
    assert js(browser, "return document.getElementById('cq-register').disabled") is True
    assert js(browser, "return document.querySelector('#push-form button').disabled") is True
    assert js(browser, "return Array.from(document.querySelectorAll('.connector-form button')).map(b => b.disabled)") == [True, True]
    # Signed in (the token kept in session storage): writes carry it and succeed.
    js(browser, "sessionStorage.setItem('cqels-token', 's3cret')")
    open_console(browser, server)
    wait(lambda: js(browser, "return document.getElementById('auth-state').textContent") == "signed in", what="signing in")
    click(browser, "tab-continuous")
    js(browser, "document.getElementById('cq-name').value = 'guarded'")
    click(browser, "cq-register")
    wait(lambda: table_rows(browser, "#cq-list tbody tr[data-name='guarded']"), what="the registered query")
    # A wrong token is refused by the server, and the console says so.
    js(browser, "sessionStorage.setItem('cqels-token', 'wrong')")
    click(browser, "cq-new")
    js(browser, "document.getElementById('cq-name').value = 'refused'")
    click(browser, "cq-register")
    wait(lambda: "401" in js(browser, "return document.getElementById('cq-status').textContent"), what="the refusal")
    assert "bearer token is wrong" in js(browser, "return document.getElementById('cq-error').textContent")
    assert json.loads(server.get("/queries").text)["queries"][0]["name"] == "guarded"


def test_ask_construct_and_every_download_format(browser, server):
    open_console(browser, server)
    set_editor(browser, "query-editor", f"ASK {{ GRAPH <{LV}> {{ ?a <{LV}connected> ?b }} }}")
    click(browser, "run-query")
    wait(lambda: js(browser, "const b = document.getElementById('boolean-result'); return b && b.textContent"), what="the answer")
    assert js(browser, "return document.getElementById('boolean-result').textContent") == "true"

    construct = f"CONSTRUCT {{ ?b <{LV}connectedFrom> ?a }} WHERE {{ GRAPH <{LV}> {{ ?a <{LV}connected> ?b }} }}"
    set_editor(browser, "query-editor", construct)
    click(browser, "run-query")
    wait(lambda: js(browser, "const g = document.getElementById('graph-result'); return g && g.textContent"), what="the graph")
    shown = js(browser, "return document.getElementById('graph-result').textContent")
    served = server.query(construct, accept="text/turtle").text
    parsed = [set(ox.parse(text.encode(), format=ox.RdfFormat.TURTLE)) for text in (shown, served)]
    assert parsed[0] == parsed[1] and parsed[0]
    offered = js(browser, "return Array.from(document.querySelectorAll('#download-links button')).map(b => b.dataset.accept)")
    assert offered == ["text/turtle", "application/n-triples", "application/rdf+xml", "application/ld+json",
                       "application/n-quads", "application/trig"]
    for accept in offered:
        js(browser, "document.getElementById('query-status').textContent = ''")
        js(browser, f"document.querySelector('#download-links button[data-accept=\"{accept}\"]').click()")
        wait(lambda: "downloaded results." in js(browser, "return document.getElementById('query-status').textContent"),
             what=f"the {accept} download")


def test_the_demo_opens_on_live_results_and_a_moving_plan(browser, tmp_path):
    # cqels serve --demo as the README's first command starts it: the console opens by itself on
    # the demo query, whose rows arrive from the demo stream, and its plan's counters move.
    from serve_process import serving

    with serving("--memory", "--demo", cwd=tmp_path) as server:
        open_console(browser, server)
        wait(lambda: not js(browser, "return document.getElementById('view-continuous').hidden"), what="the continuous view")
        wait(lambda: js(browser, "return document.getElementById('cq-name').value") == "demo", what="the demo query selected")
        wait(lambda: len(table_rows(browser, "#live-rows tbody tr")) >= 2, what="live rows from the demo stream")
        names = {'"Alice Smith"', '"Bob Jones"', '"Carol White"', '"Dave Brown"', '"Erin Green"'}  # as terms
        assert {row[1] for row in table_rows(browser, "#live-rows tbody tr")} <= names
        click(browser, "subtab-plan")
        wait(lambda: js(browser, "return document.querySelectorAll('#plan-tree .node').length") >= 3, what="the plan tree")
        inputs = "return Array.from(document.querySelectorAll('#plan-tree .counter[data-counter=\"inputs\"] b')).map(b => b.textContent).join(',')"
        before = js(browser, inputs)
        assert before
        wait(lambda: js(browser, inputs) != before, what="the plan's counters to move")
        assert server.stop() == 0
