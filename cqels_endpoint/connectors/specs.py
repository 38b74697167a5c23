"""What a source or a sink is, as the user declares it: ``PUT /sources/{name}`` (JSON), ``cqels serve
--source NAME=URL``, and the same for sinks; what the connectors file keeps.

A **source** reads messages from outside and pushes each as a batch of events onto one stream::

    {"kind": "mqtt", "address": "mqtt://broker:1883", "topics": ["sensors/+/obs"], "stream": "obs",
     "format": "ntriples", "time": "payload", "qos": 1, "username": "cqels", "password_env": "MQTT_PASSWORD"}
    {"kind": "websocket", "address": "ws://publisher:8080/stream", "stream": "obs", "format": "turtle"}

A **sink** publishes each emission of a registered query::

    {"kind": "mqtt", "address": "mqtt://broker:1883", "topic": "results/q1", "query": "q1", "format": "json"}

Every field but ``kind``, ``address``, ``stream``/``query`` and the MQTT topics has a default (the
``SourceSpec``/``SinkSpec`` fields). Credentials are never stored: ``username_env``,
``password_env`` and ``token_env`` name environment variables of the server, read when it connects.
``address`` schemes: ``mqtt``/``mqtts`` (TLS), ``ws``/``wss`` (TLS). The URL form (``--source``,
``--sink``) is the address with the other fields as query parameters, and for MQTT the topic as the
path (``#`` written ``%23``, several topics as repeated ``topic=``)::

    mqtt://cqels@broker:1883/sensors/+/obs?stream=obs&format=ntriples&qos=1&password_env=MQTT_PASSWORD
    ws://publisher:8080/stream?stream=obs&format=turtle
    mqtt://broker:1883/results/q1?query=q1&format=json

A WebSocket address keeps its own query parameters; only the fields named here are taken from it.
``SpecError`` says what is wrong, naming the field.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from cqels_endpoint.connectors.events import EVENT_FORMATS
from cqels_endpoint.connectors.subscriptions import OVERFLOW_POLICIES

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.~-]{0,199}\Z")
SCHEMES = {"mqtt": ("mqtt", "mqtts"), "websocket": ("ws", "wss")}
SOURCE_KINDS = ("mqtt", "websocket")
SINK_KINDS = ("mqtt",)
#: Where an event's time comes from: "payload" (a TriG graph's prov:generatedAtTime, an NDJSON
#: line's "time"; for a one-event syntax the arrival), "arrival", or the IRI of a predicate whose
#: object in the event is its time (an xsd:dateTime or integer milliseconds).
TIME_SOURCES = ("payload", "arrival")
#: What a sink publishes: the emission's JSON (the SSE payload), or a CONSTRUCT's triples alone.
SINK_FORMATS = ("json", "ntriples")
OVERFLOWS = OVERFLOW_POLICIES


class SpecError(ValueError):
    """A declaration that cannot be a source or sink; the message names the field."""


@dataclass(frozen=True)
class Tls:
    """TLS settings of an ``mqtts``/``wss`` address: ``ca`` (a PEM file; None: the system's
    authorities), a client certificate ``cert`` + ``key``, and ``insecure`` (no host name check)."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    insecure: bool = False


@dataclass(frozen=True)
class Retry:
    """Reconnection: the first wait, doubled after each failure up to ``max_ms``; ``attempts`` in a
    row before the connector is ``failed`` (None: forever)."""

    initial_ms: int = 500
    max_ms: int = 30_000
    attempts: int | None = None


@dataclass(frozen=True)
class Connection:
    """What every connector needs to reach its peer."""

    name: str
    kind: str
    address: str
    username: str | None = None
    username_env: str | None = None
    password_env: str | None = None
    token_env: str | None = None  # WebSocket: sent as "Authorization: Bearer <token>"
    client_id: str | None = None  # MQTT; None: "cqels-<name>"
    clean_session: bool = False  # MQTT: False keeps the session (and QoS 1 messages) across reconnects
    keepalive_s: int = 30
    tls: Tls | None = None
    retry: Retry = field(default_factory=Retry)

    @property
    def scheme(self) -> str:
        return urlsplit(self.address).scheme

    @property
    def secure(self) -> bool:
        return self.scheme in ("mqtts", "wss")


@dataclass(frozen=True)
class SourceSpec(Connection):
    stream: str = ""
    topics: tuple[str, ...] = ()  # MQTT topic filters (wildcards + and #)
    format: str = "ntriples"  # a key of connectors.events.EVENT_FORMATS
    time: str = "payload"  # TIME_SOURCES or a predicate IRI
    qos: int = 1


@dataclass(frozen=True)
class SinkSpec(Connection):
    query: str = ""
    topic: str = ""
    format: str = "json"  # SINK_FORMATS; "ntriples" for CONSTRUCT queries only
    qos: int = 1
    retain: bool = False
    buffer: int = 1000  # emissions waiting to be published
    overflow: str = "drop-oldest"  # what a full buffer does with the next emission (OVERFLOWS)


_CONNECTION_FIELDS = {f.name for f in dataclasses.fields(Connection)}
_NESTED = {"tls": Tls, "retry": Retry}


def source_from_json(name: str, data: object) -> SourceSpec:
    """The source ``name`` declared by ``data`` (the JSON of ``PUT /sources/{name}``)."""
    spec = _build(SourceSpec, name, data, SOURCE_KINDS)
    if not spec.stream:
        raise SpecError('"stream": give the stream the source pushes to (an IRI or a short name)')
    if spec.format not in EVENT_FORMATS:
        raise SpecError(f'"format": {spec.format!r} is not an event syntax; use one of {", ".join(EVENT_FORMATS)}')
    if spec.time not in TIME_SOURCES and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:\S+\Z", spec.time):
        raise SpecError(f'"time": {spec.time!r} is neither "payload", "arrival" nor the IRI of a predicate')
    if spec.kind == "mqtt":
        if not spec.topics or not all(isinstance(t, str) and _topic_filter(t) for t in spec.topics):
            raise SpecError('"topics": give one or more MQTT topic filters (a/b, a/+/c, a/#)')
        if spec.qos not in (0, 1):
            raise SpecError(f'"qos": {spec.qos!r}; a source subscribes with QoS 0 or 1')
    elif spec.topics:
        raise SpecError('"topics" is for MQTT sources; a WebSocket source reads its address')
    return spec


def sink_from_json(name: str, data: object) -> SinkSpec:
    """The sink ``name`` declared by ``data`` (the JSON of ``PUT /sinks/{name}``)."""
    spec = _build(SinkSpec, name, data, SINK_KINDS)
    if not spec.query:
        raise SpecError('"query": give the name of the registered query whose emissions the sink publishes')
    if not spec.topic or "+" in spec.topic or "#" in spec.topic or not _topic_filter(spec.topic):
        raise SpecError('"topic": give the MQTT topic to publish to (no wildcard, at most 65,535 bytes)')
    if spec.format not in SINK_FORMATS:
        raise SpecError(f'"format": {spec.format!r}; use one of {", ".join(SINK_FORMATS)}')
    if spec.qos not in (0, 1):
        raise SpecError(f'"qos": {spec.qos!r}; a sink publishes with QoS 0 or 1')
    if spec.overflow not in OVERFLOWS:
        raise SpecError(f'"overflow": {spec.overflow!r}; use one of {", ".join(OVERFLOWS)}')
    if spec.buffer < 1:
        raise SpecError(f'"buffer": {spec.buffer}; a sink buffers at least one emission')
    return spec


def to_json(spec: SourceSpec | SinkSpec) -> dict:
    """The declaration of ``spec`` with every field, as ``*_from_json`` reads it back (no secret:
    credentials are names of environment variables)."""
    data = dataclasses.asdict(spec)
    del data["name"]
    if isinstance(spec, SourceSpec):
        data["topics"] = list(spec.topics)
    return data


def from_url(name: str, url: str, *, sink: bool) -> SourceSpec | SinkSpec:
    """The source (or sink) of a ``--source NAME=URL`` (``--sink``) flag (module docstring)."""
    parts = urlsplit(url)
    kind = next((kind for kind, schemes in SCHEMES.items() if parts.scheme in schemes), None)
    if kind is None:
        raise SpecError(f"{url!r}: the address must start with mqtt://, mqtts://, ws:// or wss://")
    fields = SinkSpec if sink else SourceSpec
    names = {f.name for f in dataclasses.fields(fields)} - {"name", "kind", "address", "tls", "retry"}
    data: dict = {"kind": kind}
    kept = []
    tls: dict = {}
    retry: dict = {}
    # A URL's query, not a form: "+" is a plus (an MQTT wildcard), not a space.
    for key, value in parse_qsl(parts.query.replace("+", "%2B"), keep_blank_values=True):
        if key in ("topic", "topics") and not sink and kind == "mqtt":
            data.setdefault("topics", []).append(value)
        elif key in names:
            data[key] = _from_text(fields, key, value)
        elif key.startswith("tls_") and key[4:] in {f.name for f in dataclasses.fields(Tls)}:
            tls[key[4:]] = _from_text(Tls, key[4:], value)
        elif key.startswith("retry_") and key[6:] in {f.name for f in dataclasses.fields(Retry)}:
            retry[key[6:]] = _from_text(Retry, key[6:], value)
        elif kind == "websocket":
            kept.append((key, value))  # the publisher's own parameter
        else:
            raise SpecError(f"{url!r}: unknown parameter {key!r}")
    if tls:
        data["tls"] = tls
    if retry:
        data["retry"] = retry
    if parts.username:
        data["username"] = unquote(parts.username)
    if parts.password:
        raise SpecError(f"{url!r}: give the password by password_env=VARIABLE, not in the URL")
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    if kind == "mqtt":
        topic = unquote(parts.path[1:])
        if topic:
            data["topic" if sink else "topics"] = topic if sink else [topic, *data.get("topics", [])]
        data["address"] = urlunsplit((parts.scheme, netloc, "", "", ""))
    else:
        data["address"] = urlunsplit((parts.scheme, netloc, parts.path, urlencode(kept), ""))
    return sink_from_json(name, data) if sink else source_from_json(name, data)


def _build(cls: type, name: str, data: object, kinds: tuple[str, ...]) -> SourceSpec | SinkSpec:
    if not NAME.match(name):
        raise SpecError(f"{name!r} is not a connector name: letters, digits and _.~- (up to 200), not starting with a symbol")
    if not isinstance(data, dict):
        raise SpecError("give a JSON object")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields) - {"name"})
    if unknown:
        raise SpecError(f'unknown field "{unknown[0]}"; the fields are {", ".join(sorted(set(fields) - {"name"}))}')
    if data.get("name", name) != name:
        raise SpecError(f'"name": {data["name"]!r} is not the name in the path, {name!r}')
    kind = data.get("kind")
    if kind not in kinds:
        role = "source" if cls is SourceSpec else "sink"
        raise SpecError(f'"kind": {kind!r}; a {role} is one of {", ".join(kinds)}')
    address = data.get("address")
    if not isinstance(address, str) or urlsplit(address).scheme not in SCHEMES[kind] or not urlsplit(address).hostname:
        raise SpecError(f'"address": {address!r}; a {kind} address is {" or ".join(s + "://host:port" for s in SCHEMES[kind])}')
    values = {"name": name}
    for key, value in data.items():
        if key == "name":
            continue
        if key in _NESTED:
            values[key] = None if value is None else _nested(_NESTED[key], key, value)
        elif key == "topics":
            values[key] = tuple(value) if isinstance(value, list) else _wrong(key, value, "a list of topic filters")
        else:
            values[key] = _checked(fields[key], key, value)
    spec = cls(**values)
    if spec.tls is not None and not spec.secure:
        raise SpecError(f'"tls" needs a secure address ({SCHEMES[kind][1]}://), not {address!r}')
    return spec


def _nested(cls: type, key: str, value: object) -> object:
    if not isinstance(value, dict):
        return _wrong(key, value, "an object")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise SpecError(f'"{key}": unknown field "{unknown[0]}"; the fields are {", ".join(fields)}')
    return cls(**{name: _checked(fields[name], f"{key}.{name}", item) for name, item in value.items()})


_TYPES = {"str": str, "int": int, "bool": bool, "str | None": (str, type(None)), "int | None": (int, type(None))}


def _checked(spec_field: dataclasses.Field, key: str, value: object) -> object:
    expected = _TYPES.get(str(spec_field.type))
    if expected is None:
        raise SpecError(f'"{key}" cannot be set')
    if (isinstance(value, bool) and expected in (int, (int, type(None)))) or not isinstance(value, expected):
        return _wrong(key, value, str(spec_field.type).replace(" | None", " or null"))
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return _wrong(key, value, "a non-negative number")
    return value


def _from_text(cls: type, key: str, text: str) -> object:
    """A URL parameter's text as the type of field ``key`` of ``cls``."""
    kind = str(next(f for f in dataclasses.fields(cls) if f.name == key).type)
    if kind.startswith("int"):
        if not text.isdigit():
            raise SpecError(f"{key}={text!r}: give a whole number")
        return int(text)
    if kind == "bool":
        if text.lower() not in ("true", "false", "1", "0"):
            raise SpecError(f"{key}={text!r}: give true or false")
        return text.lower() in ("true", "1")
    return text


def _wrong(key: str, value: object, expected: str) -> object:
    raise SpecError(f'"{key}": {value!r} is not {expected}')


def _topic_filter(topic: str) -> bool:
    """Whether ``topic`` is an MQTT topic filter: ``+`` a whole level, ``#`` only the last one, at
    most 65,535 bytes of UTF-8 (MQTT's length field)."""
    if not topic or "\0" in topic or len(topic.encode("utf-8", "surrogatepass")) > 65_535:
        return False
    levels = topic.split("/")
    return all(level in ("+", "#") or ("+" not in level and "#" not in level) for level in levels) and "#" not in levels[:-1]
