"""Declarations of sources and sinks (``connectors.specs``): what a PUT body and a ``--source``/
``--sink`` URL mean, read back from what is kept (``to_json``), and refused with the field named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cqels_endpoint.connectors.events import EVENT_FORMATS
from cqels_endpoint.connectors.specs import (
    OVERFLOWS,
    SpecError,
    from_url,
    sink_from_json,
    source_from_json,
    to_json,
)

names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.~-]{0,20}", fullmatch=True)
levels = st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True)
topics = st.lists(st.one_of(levels, st.just("+")), min_size=1, max_size=4).flatmap(
    lambda parts: st.sampled_from(["/".join(parts), "/".join([*parts, "#"])]))
hosts = st.sampled_from(["localhost", "broker.example.org", "127.0.0.1"])
ports = st.integers(1, 65535)
retries = st.fixed_dictionaries({}, optional={"initial_ms": st.integers(1, 5000), "max_ms": st.integers(1, 60000),
                                              "attempts": st.one_of(st.none(), st.integers(0, 10))})


@st.composite
def sources(draw) -> dict:
    kind = draw(st.sampled_from(["mqtt", "websocket"]))
    secure = draw(st.booleans())
    scheme = {"mqtt": "mqtts" if secure else "mqtt", "websocket": "wss" if secure else "ws"}[kind]
    address = f"{scheme}://{draw(hosts)}:{draw(ports)}" + ("/feed" if kind == "websocket" else "")
    data = {"kind": kind, "address": address, "stream": draw(st.sampled_from(["obs", "http://ex.org/s"])),
            "format": draw(st.sampled_from(sorted(EVENT_FORMATS))),
            "time": draw(st.sampled_from(["payload", "arrival", "http://www.w3.org/ns/sosa/resultTime"]))}
    if kind == "mqtt":
        data["topics"] = draw(st.lists(topics, min_size=1, max_size=3))
        data["qos"] = draw(st.sampled_from([0, 1]))
        data["clean_session"] = draw(st.booleans())
    if draw(st.booleans()):
        data["username"], data["password_env"] = "cqels", "CQELS_PASSWORD"
    if secure and draw(st.booleans()):
        data["tls"] = {"insecure": draw(st.booleans())}
    if draw(st.booleans()):
        data["retry"] = draw(retries)
    return data


@st.composite
def sinks(draw) -> dict:
    return {"kind": "mqtt", "address": f"mqtt://{draw(hosts)}:{draw(ports)}", "query": draw(names),
            "topic": "/".join(draw(st.lists(levels, min_size=1, max_size=3))),
            "format": draw(st.sampled_from(["json", "ntriples"])), "qos": draw(st.sampled_from([0, 1])),
            "retain": draw(st.booleans()), "buffer": draw(st.integers(1, 10_000)), "overflow": draw(st.sampled_from(OVERFLOWS))}


@given(name=names, data=sources())
def test_a_kept_source_reads_back_as_declared(name, data) -> None:
    spec = source_from_json(name, data)
    assert source_from_json(name, to_json(spec)) == spec
    for key, value in data.items():
        kept = to_json(spec)[key]
        assert kept == ({**to_json(spec)[key], **value} if isinstance(value, dict) else value)


@given(name=names, data=sinks())
def test_a_kept_sink_reads_back_as_declared(name, data) -> None:
    spec = sink_from_json(name, data)
    assert sink_from_json(name, to_json(spec)) == spec
    assert {key: to_json(spec)[key] for key in data} == data


@given(name=names, data=sources())
def test_the_url_form_of_a_source_means_the_json_form(name, data) -> None:
    """The URL written from a declaration reads back to the same source (module docstring's form)."""
    from urllib.parse import quote, urlencode

    params = [(k, v) for k, v in data.items() if k not in ("kind", "address", "topics", "tls", "retry")]
    params += [(f"tls_{k}", v) for k, v in data.get("tls", {}).items()]
    params += [(f"retry_{k}", v) for k, v in data.get("retry", {}).items() if v is not None]
    url = data["address"]
    if data["kind"] == "mqtt":
        first, *others = data["topics"]
        url += "/" + quote(first, safe="/+")
        params += [("topic", topic) for topic in others]
    if "username" in data:
        scheme, rest = url.split("://", 1)
        url = f"{scheme}://{data['username']}@{rest}"
        params = [(k, v) for k, v in params if k != "username"]
    text = url + "?" + urlencode([(k, str(v).lower() if isinstance(v, bool) else v) for k, v in params])
    expected = dict(data)
    if expected.get("retry", {}).get("attempts", 0) is None:
        del expected["retry"]["attempts"]  # a URL has no null: the default (None) anyway
    assert from_url(name, text, sink=False) == source_from_json(name, expected)


def test_url_forms_of_the_documentation() -> None:
    source = from_url("s", "mqtt://cqels@broker:1883/sensors/+/obs?stream=obs&format=ntriples&qos=1&password_env=P", sink=False)
    assert (source.address, source.topics, source.username, source.password_env) == ("mqtt://broker:1883", ("sensors/+/obs",), "cqels", "P")
    every = from_url("s", "mqtt://broker/a/%23?stream=obs&topic=b/+", sink=False)
    assert every.topics == ("a/#", "b/+")
    ws = from_url("w", "ws://publisher:8080/stream?stream=obs&format=turtle&channel=7", sink=False)
    assert (ws.address, ws.format) == ("ws://publisher:8080/stream?channel=7", "turtle")
    sink = from_url("k", "mqtt://broker:1883/results/q1?query=q1&format=json&retain=true", sink=True)
    assert (sink.topic, sink.query, sink.retain) == ("results/q1", "q1", True)


@pytest.mark.parametrize(("url", "message"), [
    ("http://h/x", "must start with mqtt://"),
    ("mqtt://u:pw@h/t?stream=s", "password_env"),
    ("mqtt://h/t?stream=s&colour=red", "unknown parameter 'colour'"),
    ("mqtt://h/t?stream=s&qos=one", "qos='one': give a whole number"),
    ("mqtt://h/a/%23/b?stream=s", '"topics"'),
    ("mqtt://h?stream=s", '"topics"'),
    ("mqtt://h/" + "t" * 65_536 + "?stream=s", '"topics"'),
    ("mqtt://h/t?stream=s&clean_session=maybe", "give true or false"),
])
def test_bad_urls_say_what_is_wrong(url, message) -> None:
    with pytest.raises(SpecError, match=None) as refused:
        from_url("x", url, sink=False)
    assert message in str(refused.value)


def test_sink_refusals_name_the_field() -> None:
    base = {"kind": "mqtt", "address": "mqtt://h", "query": "q", "topic": "t"}
    for change, message in (({"topic": "a/+"}, '"topic"'), ({"topic": "t" * 65_536}, "65,535 bytes"),
                            ({"query": ""}, '"query"'), ({"overflow": "block"}, '"overflow"'),
                            ({"buffer": 0}, '"buffer"'), ({"format": "turtle"}, '"format"'), ({"qos": 2}, '"qos"'),
                            ({"retain": "yes"}, '"retain"'), ({"kind": "websocket"}, "a sink is one of mqtt")):
        with pytest.raises(SpecError) as refused:
            sink_from_json("k", {**base, **change})
        assert message in str(refused.value), change
