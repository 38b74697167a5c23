"""MQTT sources and sinks on paho-mqtt (MQTT 3.1.1), each driving its client's network loop in the
connector's own thread (``base``), so a message is delivered, and acknowledged, in that thread.

**A source** subscribes to each of its topic filters at its ``qos``. A QoS 1 message is
acknowledged (PUBACK) only once ``Source.deliver`` returned, the batch accepted or refused for
good (the messages one socket read brings are delivered in turn, then their PUBACKs written in one
go): a server that stops, or crashes, before that leaves the message with the broker, which sends
it again when the source's persistent session (``clean_session`` false, the default) reconnects,
so it is taken at least once. The subscriptions live in that session too: they are made on the
first connection and again whenever the broker says it has no session for the client
(``session present`` false), not at every reconnection, since a subscription made again makes the
broker send its topics' retained messages again. A QoS 0 message, or any message of a clean
session, is delivered once at most: the broker keeps nothing for a client away.

**A sink** publishes the payload of each emission of its query to its topic at its ``qos`` and
``retain``. It keeps one client across reconnections, so a QoS 1 message the broker has not
acknowledged when the connection drops is sent again (with the DUP flag) once it is back; at most
``MAX_IN_FLIGHT`` wait for their acknowledgement, and meanwhile, as while the broker is away, the
next emissions wait in the sink's bounded buffer (``base.Sink``). ``published`` counts the QoS 1
messages the broker acknowledged and the QoS 0 messages handed to the connection; ``failed``, the
ones that could not be (too large, a QoS 0 message while disconnected), each logged.

A refused connection (CONNACK) is retried by the base's backoff with the broker's reason (bad
credentials say so); credentials come from the environment variables the spec names, read at
each connection (a variable that is not set is ``ConnectorFailed``, naming it), as do the TLS
files (one that cannot be read is ``ConnectorFailed``).
"""

from __future__ import annotations

import logging
import select
import ssl
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode

from cqels_endpoint.connectors.base import _POLL_S, ConnectionLost, Connector, ConnectorFailed, Sink, Source
from cqels_endpoint.connectors.specs import Connection, SinkSpec, SourceSpec, Tls
from cqels_endpoint.connectors.subscriptions import Subscriptions
from cqels_endpoint.engine import Engine

log = logging.getLogger("cqels_endpoint.connectors")

DEFAULT_PORTS = {"mqtt": 1883, "mqtts": 8883}
#: QoS 1 messages a sink has published and the broker not yet acknowledged, at most.
MAX_IN_FLIGHT = 20
# Bytes a client reads from its socket at once (``_Client``).
_READ_BYTES = 65536
# CONNACK reason codes (MQTT 5 numbering, to which paho maps 3.1.1's) that mean the credentials.
_CREDENTIAL_REASONS = (0x86, 0x87, 0x8C)  # bad user name or password, not authorized, bad authentication method


class _Link:
    """One connection attempt of a paho client, as its callbacks report it."""

    def __init__(self, client: mqtt.Client, spec: Connection, user: str | None, tls: _TlsContext | None):
        self.spec = spec
        self.user = user
        self.tls = tls
        self.connack: mqtt.ReasonCode | None = None
        self.session_present = False
        self.lost: str | None = None  # why the connection ended, when the callbacks said
        self.error: str | None = None  # the first error paho met on the socket (a TLS failure, a reset)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_log = self._on_log

    def _on_connect(self, _client, _userdata, flags, reason, _properties) -> None:
        self.connack = reason
        self.session_present = flags.session_present

    def _on_disconnect(self, _client, _userdata, _flags, reason, _properties) -> None:
        # MQTT 3.1.1 has no reason for a lost connection: paho says "Unspecified error" then.
        if reason is not None and reason.is_failure and reason.value != 0x80:
            self.lost = str(reason)

    def _on_log(self, _client, _userdata, level, message) -> None:
        if level == mqtt.MQTT_LOG_ERR and self.error is None:  # the first: later ones only say the socket is gone
            self.error = message

    def refusal(self) -> str:
        """The reason of a refused CONNACK, saying which credentials when it is theirs."""
        reason = f"the broker refused the connection: {self.connack}"
        if self.connack.value in _CREDENTIAL_REASONS:
            spec = self.spec
            if self.user is None:
                return f"{reason} (no credentials were given: set username and password_env)"
            password = f"the password in ${spec.password_env}" if spec.password_env else "no password"
            return f"{reason} (bad credentials? user {self.user!r} with {password})"
        return reason

    def connection_lost(self, rc: MQTTErrorCode) -> ConnectionLost:
        what = "the connection to the broker was lost" if self.connack is not None else "the broker closed the connection before accepting it"
        return ConnectionLost(f"{what} ({self.error or self.lost or mqtt.error_string(rc)})")


class _Client(mqtt.Client):
    """paho's client reading its socket a buffer at a time: paho reads each packet in three calls (its
    type, its length, the rest), each a system call; here one ``recv`` takes all the kernel holds
    (``_READ_BYTES`` at most) and the calls are served from it (``buffered``: bytes are left;
    ``reads``: the ``recv`` calls made). It overrides paho's ``_sock_recv`` and ``_sock_send``, the
    two calls through which paho reads and writes its socket (were they renamed, the client would
    read and write unbuffered, as paho does)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._read = b""
        self._read_at = 0  # what paho has taken of ``_read``
        self._read_from = None  # the socket ``_read`` came from (a reconnection makes a new one)
        self.reads = 0
        self._held: list[bytes] | None = None  # what paho wrote while ``holding``

    @property
    def buffered(self) -> bool:
        return self._read_at < len(self._read) and self._read_from is self.socket()

    def _sock_recv(self, bufsize: int) -> bytes:
        if not self.buffered:
            self._read, self._read_at, self._read_from = b"", 0, self.socket()
            self._read = super()._sock_recv(_READ_BYTES)  # raises BlockingIOError when there is nothing
            self.reads += 1
        at = self._read_at
        data = self._read[at:at + bufsize]
        self._read_at = at + len(data)
        return data

    @contextmanager
    def holding(self, timeout: float) -> Iterator[None]:
        """Holds what paho writes meanwhile and then writes it in one ``send``: the PUBACKs of a batch
        of messages, each queued once its message was delivered, cost one system call, not one each
        (a call that also lets go of the GIL). Gives up (``ConnectionLost``) when the broker took
        nothing for ``timeout`` seconds."""
        self._held = []
        try:
            yield
        finally:
            data, self._held = memoryview(b"".join(self._held)), None
            while data and self.socket() is not None:
                try:
                    data = data[super()._sock_send(data):]
                except BlockingIOError:  # the kernel's buffer is full: the broker is behind
                    if not select.select([], [self.socket()], [], timeout)[1]:
                        raise ConnectionLost(f"the broker took no data for {timeout:g} s") from None
                except OSError:  # the connection is lost, as the next read says; paho too drops what it could not write then
                    return

    def _sock_send(self, buf: bytes | bytearray) -> int:
        if self._held is None:
            return super()._sock_send(buf)
        self._held.append(bytes(buf))
        return len(buf)


class _TlsContext(ssl.SSLContext):
    """Remembers the socket it wraps: paho leaves it open when the TLS handshake fails (a
    ResourceWarning later), so ``_connect`` closes it."""

    wrapped: ssl.SSLSocket | None = None

    def wrap_socket(self, *args, **kwargs) -> ssl.SSLSocket:
        self.wrapped = super().wrap_socket(*args, **kwargs)
        return self.wrapped


def _client(connector: Connector) -> tuple[_Client, str | None, _TlsContext | None]:
    """A paho client for ``connector`` with its credentials and TLS set, the user name and the TLS context."""
    spec = connector.spec
    client = _Client(CallbackAPIVersion.VERSION2, client_id=spec.client_id or f"cqels-{spec.name}",
                         clean_session=spec.clean_session, protocol=mqtt.MQTTv311, manual_ack=True,
                         reconnect_on_failure=False)
    user = _credentials(connector, client)
    context = None
    if spec.secure:
        tls = spec.tls or Tls()
        context = _TlsContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the certificate and the host name
        try:
            if tls.ca is None:
                context.load_default_certs()
            else:
                context.load_verify_locations(tls.ca)
            if tls.cert is not None:
                context.load_cert_chain(tls.cert, tls.key)
        except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
            raise ConnectorFailed(f"tls: cannot load the CA, certificate or key: {error}") from None
        client.tls_set_context(context)
        if tls.insecure:
            context.check_hostname = False
            client.tls_insecure_set(True)
    return client, user, context


def _credentials(connector: Connector, client: mqtt.Client) -> str | None:
    """Sets the user and password the spec names (read from the environment now); returns the user."""
    spec = connector.spec
    user = spec.username if spec.username is not None else connector.secret(spec.username_env)
    password = connector.secret(spec.password_env)
    if password is not None and user is None:
        raise ConnectorFailed("password_env is set but no username: MQTT sends a password only with a user name")
    client.username_pw_set(user, password)
    return user


def _connect(client: mqtt.Client, spec: Connection, link: _Link, stopping) -> bool:
    """Connects and waits for the broker's CONNACK: True once accepted, False when stopping first;
    raises ``ConnectionLost`` (refused, or lost) or ``OSError`` (unreachable)."""
    address = urlsplit(spec.address)
    try:
        client.connect(address.hostname, address.port or DEFAULT_PORTS[address.scheme], keepalive=spec.keepalive_s)
    except OSError:
        if link.tls is not None and link.tls.wrapped is not None:
            link.tls.wrapped.close()
        raise
    while link.connack is None:
        if stopping.is_set():
            return False
        # A broker that never answers is given up by paho's keepalive check, which closes the socket.
        rc = _loop(client, _POLL_S)
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS and link.connack is None:
            raise link.connection_lost(rc)
    if link.connack.is_failure:
        raise ConnectionLost(link.refusal())
    return True


def _loop(client: _Client, timeout: float) -> MQTTErrorCode:
    """One round of the client's network loop: waits up to ``timeout`` seconds for the socket, reads
    a packet, writes what is queued and keeps the connection alive; paho's ``loop()`` but for its
    socket pair, which wakes the ``select`` of ``loop_start``'s thread when another thread queues a
    packet: here the thread that queues is the one that selects, and the pair cost two system calls
    a message (a byte written at each PUBACK or PUBLISH queued, read back at the next round)."""
    sock = client.socket()
    if sock is None:
        return MQTTErrorCode.MQTT_ERR_NO_CONN
    # Bytes read already, or a TLS socket's records decrypted already, which select does not see.
    pending = getattr(sock, "pending", None)
    ready = client.buffered or (pending is not None and pending() > 0)
    try:
        readable, writable, _ = select.select([sock], [sock] if client.want_write() else [], [], 0 if ready else timeout)
    except (OSError, ValueError):  # the socket was closed meanwhile
        return MQTTErrorCode.MQTT_ERR_CONN_LOST
    if readable or ready:
        rc = client.loop_read()
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS or client.socket() is None:
            return rc or MQTTErrorCode.MQTT_ERR_CONN_LOST
    if writable:
        rc = client.loop_write()
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS or client.socket() is None:
            return rc or MQTTErrorCode.MQTT_ERR_CONN_LOST
    return client.loop_misc()


def _close(client: mqtt.Client) -> None:
    """Ends the connection: a DISCONNECT when it is up (paho then closes the socket); nothing when it is down."""
    client.disconnect()


class MqttSource(Source):
    """Reads the messages of ``spec.topics`` into ``stream`` (module docstring)."""

    def __init__(self, spec: SourceSpec, engine: Engine, stream: str):
        super().__init__(spec, engine, stream)
        self._subscribed = False  # this source's subscriptions are in the broker's session for its client

    def _serve(self) -> None:
        spec = self.spec
        client, user, tls = _client(self)
        link = _Link(client, spec, user, tls)
        received: deque[mqtt.MQTTMessage] = deque()
        client.on_message = lambda _client, _userdata, message: received.append(message)
        granted: list = []
        client.on_subscribe = lambda _client, _userdata, _mid, reasons, _properties: granted.extend(reasons)
        try:
            if not _connect(client, spec, link, self.stopping):
                return
            if not (link.session_present and self._subscribed):
                self._subscribe(client, link, granted)
            self._subscribed = not spec.clean_session
            self.connected()
            while not self.stopping.is_set():
                rc = _loop(client, _POLL_S)
                # The messages of that read are all taken before they are delivered: one select a
                # batch, not a message; a batch ends with its read, so the messages waiting are bounded.
                reads = client.reads
                while rc == MQTTErrorCode.MQTT_ERR_SUCCESS and client.buffered and client.reads == reads:
                    rc = client.loop_read()
                self._deliver_received(client, received, up=rc == MQTTErrorCode.MQTT_ERR_SUCCESS)
                if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
                    raise link.connection_lost(rc)
        finally:
            _close(client)

    def _subscribe(self, client: mqtt.Client, link: _Link, granted: list) -> None:
        spec = self.spec
        rc, _ = client.subscribe([(topic, spec.qos) for topic in spec.topics])
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
            raise link.connection_lost(rc)
        # Messages the session kept may come before the SUBACK: they wait in ``received``.
        while len(granted) < len(spec.topics):
            if self.stopping.is_set():
                return
            rc = _loop(client, _POLL_S)
            if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
                raise link.connection_lost(rc)
        for topic, reason in zip(spec.topics, granted):
            if reason.is_failure:
                raise ConnectionLost(f"the broker refused the subscription to {topic!r}: {reason}")
            if reason.value < spec.qos:
                log.warning("source %r: the broker granted QoS %d for %r, not %d", self.name, reason.value, topic, spec.qos)

    def _deliver_received(self, client: _Client, received: deque, *, up: bool) -> None:
        """Delivers the messages read, acknowledging each after it (the acknowledgements written
        together once all are delivered); once the connection is down, a message the broker will
        send again (QoS 1 in a persistent session) is left to it."""
        with client.holding(self.spec.keepalive_s):
            while received:
                message = received.popleft()
                if not up and message.qos and not self.spec.clean_session:
                    continue
                self.deliver(message.payload, message.topic)
                if message.qos:
                    client.ack(message.mid, message.qos)


class MqttSink(Sink):
    """Publishes the emissions of ``spec.query`` to ``spec.topic`` (module docstring)."""

    def __init__(self, spec: SinkSpec, subscriptions: Subscriptions):
        super().__init__(spec, subscriptions)
        self._client: mqtt.Client | None = None
        self._tls: _TlsContext | None = None
        self._in_flight: set[int] = set()  # QoS 1 messages not acknowledged yet, by message id

    def _serve(self) -> None:
        spec = self.spec
        if self._client is None:
            # One client for the sink's life: its unacknowledged QoS 1 messages are sent again after a reconnection.
            self._client, user, self._tls = _client(self)
            self._client.on_publish = self._acknowledged
        else:
            user = _credentials(self, self._client)
        client = self._client
        link = _Link(client, spec, user, self._tls)
        try:
            if not _connect(client, spec, link, self.stopping):
                return
            self.connected()
            while not self.stopping.is_set():
                rc = _loop(client, 0 if len(self._in_flight) < MAX_IN_FLIGHT else _POLL_S)
                if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
                    raise link.connection_lost(rc)
                if len(self._in_flight) >= MAX_IN_FLIGHT:
                    continue
                entry = self.next_emission()
                if entry is not None:
                    self._publish(client, entry)
            self._drain(client)
        finally:
            _close(client)

    def _publish(self, client: mqtt.Client, entry) -> None:
        spec = self.spec
        try:
            info = client.publish(spec.topic, self.payload(entry), qos=spec.qos, retain=spec.retain)
        except ValueError as error:  # paho refuses a payload over MQTT's 256 MB
            return self._failed(entry, str(error))
        if spec.qos == 0:
            if info.rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
                return self._failed(entry, mqtt.error_string(info.rc))
            self.published += 1
        elif info.rc in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_NO_CONN):
            # Kept by paho either way: a message published while the connection dropped goes after it.
            self._in_flight.add(info.mid)
        else:
            self._failed(entry, mqtt.error_string(info.rc))

    def _acknowledged(self, _client, _userdata, mid, _reason, _properties) -> None:
        if self.spec.qos and mid in self._in_flight:
            self._in_flight.discard(mid)
            self.published += 1

    def _failed(self, entry, reason: str) -> None:
        self.failed_publishes += 1
        log.warning("sink %r could not publish emission %d of query %r to %r: %s",
                    self.name, entry.seq, self.spec.query, self.spec.topic, reason)

    def _drain(self, client: mqtt.Client) -> None:
        """On stop: waits a little for the acknowledgements of what is in flight."""
        for _ in range(int(1 / _POLL_S)):
            if not self._in_flight or _loop(client, _POLL_S) != MQTTErrorCode.MQTT_ERR_SUCCESS:
                return

    def status(self) -> dict:
        return {**super().status(), "in_flight": len(self._in_flight)}
