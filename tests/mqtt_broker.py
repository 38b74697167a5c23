"""A real MQTT broker for the connector tests: Debian's ``mosquitto`` on free ports of 127.0.0.1,
with a generated configuration in a temporary directory.

``Broker`` listens on

- ``port``: anonymous clients;
- ``auth_port`` (``users`` given): only the users of a password file made with ``mosquitto_passwd``;
- ``tls_port`` (``tls=True``): TLS with a server certificate for ``localhost`` signed by a CA made
  with ``openssl`` (``ca``), anonymous; ``mtls_port``: the same, and the client must present a
  certificate of that CA (``client_cert``/``client_key``).

Persistence is on, saved at every change (``autosave_on_changes``), so that a broker stopped, even
by SIGKILL, and started again on the same ports keeps the persistent sessions and their queued
QoS 1 messages; every packet is logged (``acknowledgements`` reads the log). ``tested=False`` (for
benchmarks) keeps a deployment's defaults instead (saved every 30 minutes, warnings logged) and
queues without bound what a slow subscriber has not taken. ``publish`` and ``subscriber`` are test clients on paho.
"""

from __future__ import annotations

import getpass
import queue
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

HOST = "127.0.0.1"
#: The password listener's users in the tests' brokers.
USERS = {"cqels": "s3cret pass"}
START_TIMEOUT_S = 10.0


def mosquitto_executable() -> str | None:
    """The broker's executable: Debian installs it in /usr/sbin, which a user's PATH may lack."""
    found = shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin:/usr/local/sbin")
    return found if found and shutil.which("mosquitto_passwd") and shutil.which("mosquitto_pub") else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class Broker:
    """One ``mosquitto`` process (module docstring); ``start`` again after ``stop`` keeps the ports."""

    def __init__(self, directory: Path, *, users: dict[str, str] | None = None, tls: bool = False, tested: bool = True):
        self.executable = mosquitto_executable()
        if self.executable is None:
            raise RuntimeError("mosquitto and mosquitto-clients are not installed (.ci/install-mosquitto)")
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.auth_port = free_port() if users else None
        self.tls_port = free_port() if tls else None
        self.mtls_port = free_port() if tls else None
        self.ca = self.client_cert = self.client_key = None
        lines = [
            # Each listener its own authentication: anonymous on one, a password file on another.
            "per_listener_settings true",
            # Run as root, mosquitto would switch to its own user, who cannot read the temporary directory.
            f"user {getpass.getuser()}",
            "persistence true",
            f"persistence_location {directory}/",
            *(("autosave_interval 1", "autosave_on_changes true") if tested else ()),
            f"log_dest file {directory / 'mosquitto.log'}",
            f"log_type {'all' if tested else 'warning'}",
            # A benchmark measures the clients, not the broker's drops of what a slow one has queued.
            *(() if tested else ("max_queued_messages 0",)),
            f"listener {self.port} {HOST}",
            "allow_anonymous true",
        ]
        if users:
            passwords = directory / "passwords"
            passwords.touch()
            for user, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", str(passwords), user, password], check=True, capture_output=True)
            lines += [f"listener {self.auth_port} {HOST}", "allow_anonymous false", f"password_file {passwords}"]
        if tls:
            self.ca, server_cert, server_key, self.client_cert, self.client_key = _certificates(directory)
            for port, require in ((self.tls_port, "false"), (self.mtls_port, "true")):
                lines += [f"listener {port} {HOST}", "allow_anonymous true", f"cafile {self.ca}",
                          f"certfile {server_cert}", f"keyfile {server_key}", f"require_certificate {require}"]
        self.config = directory / "mosquitto.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"mqtt://{HOST}:{self.port}"

    def start(self) -> None:
        """Starts the broker and returns once every listener accepts connections."""
        self.process = subprocess.Popen([self.executable, "-c", str(self.config)], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE)
        ports = [port for port in (self.port, self.auth_port, self.tls_port, self.mtls_port) if port is not None]
        give_up = time.monotonic() + START_TIMEOUT_S
        while not all(_accepts(port) for port in ports):
            if self.process.poll() is not None:
                raise RuntimeError(f"mosquitto exited with {self.process.returncode}: {self.process.stderr.read().decode()}")
            if time.monotonic() > give_up:
                self.stop(kill=True)
                raise RuntimeError(f"mosquitto did not listen on {ports} within {START_TIMEOUT_S} s")
            time.sleep(0.01)  # the broker gives no other sign that it listens

    def stop(self, *, kill: bool = False) -> None:
        """Stops the broker: SIGTERM (it saves its persistence file and exits) or SIGKILL."""
        process, self.process = self.process, None
        if process is None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        process.send_signal(signal.SIGCONT)  # a paused broker acts on SIGTERM only once it runs again
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stderr.close()

    def pause(self) -> None:
        """Freezes the broker (SIGSTOP): connections stay open, nothing is read or answered."""
        self.process.send_signal(signal.SIGSTOP)

    def log(self) -> str:
        path = self.directory / "mosquitto.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def acknowledgements(self, client_id: str) -> int:
        """The QoS 1 messages ``client_id`` acknowledged (PUBACK), as the broker logged them."""
        return self.log().count(f"Received PUBACK from {client_id} ")

    def settle(self) -> None:
        """Returns once the broker is done with what it read before: it handles one connection at
        a time and saves its persistence file between two (autosave_on_changes), so a test
        client's connection accepted after the PUBACKs it logged means they are saved, and a
        SIGKILL after that loses none."""
        client = self.client()
        client.disconnect()
        client.loop_stop()

    # ------------------------------------------------------------------ test clients

    def client(self, client_id: str = "", *, clean_session: bool = True, user: tuple[str, str] | None = None) -> mqtt.Client:
        """A paho client connected to ``port`` (with ``user``, a name and password: ``auth_port``),
        its network loop in a thread of its own (which reconnects it, quickly, when the broker
        comes back)."""
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean_session)
        client.reconnect_delay_set(min_delay=0.05, max_delay=0.2)
        connected = queue.Queue()
        client.on_connect = lambda _c, _u, _f, reason, _p: connected.put(reason)
        if user is not None:
            client.username_pw_set(*user)
        client.connect(HOST, self.port if user is None else self.auth_port, keepalive=30)
        client.loop_start()
        reason = connected.get(timeout=5)
        if reason.is_failure:
            raise RuntimeError(f"test client refused: {reason}")
        return client

    def publish(self, topic: str, *payloads: bytes | str, qos: int = 1, retain: bool = False,
                user: tuple[str, str] | None = None) -> None:
        """Publishes ``payloads`` in order and returns once the broker has them all (QoS 1: acknowledged)."""
        client = self.client(user=user)
        try:
            infos = [client.publish(topic, payload, qos=qos, retain=retain) for payload in payloads]
            for info in infos:
                info.wait_for_publish(5)
                if not info.is_published():
                    raise RuntimeError(f"the broker did not take a message on {topic}: {mqtt.error_string(info.rc)}")
        finally:
            client.disconnect()
            client.loop_stop()

    def subscriber(self, topic: str, qos: int = 1, client_id: str = "") -> Subscriber:
        """A subscriber to ``topic``; with a ``client_id`` its session is persistent, so the QoS 1
        messages published while it is away (the broker restarting) reach it after."""
        return Subscriber(self.client(client_id, clean_session=not client_id), topic, qos)


class Subscriber:
    """A paho client subscribed to ``topic``, collecting the messages it receives."""

    def __init__(self, client: mqtt.Client, topic: str, qos: int):
        self.client = client
        self.messages: queue.Queue[mqtt.MQTTMessage] = queue.Queue()
        subscribed = queue.Queue()
        client.on_message = lambda _c, _u, message: self.messages.put(message)
        client.on_subscribe = lambda _c, _u, _mid, reasons, _p: subscribed.put(reasons)
        client.subscribe(topic, qos)
        if subscribed.get(timeout=5)[0].is_failure:
            raise RuntimeError(f"test subscription to {topic} refused")

    def take(self, count: int, timeout: float = 10.0) -> list[mqtt.MQTTMessage]:
        """The next ``count`` messages, waiting up to ``timeout`` seconds in all."""
        give_up = time.monotonic() + timeout
        return [self.messages.get(timeout=max(0.0, give_up - time.monotonic())) for _ in range(count)]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def _certificates(directory: Path) -> tuple[str, str, str, str, str]:
    """A CA, a server certificate for ``localhost`` only (so 127.0.0.1 fails the host name check)
    and a client certificate, all signed by the CA: their paths."""
    def openssl(*arguments: str) -> None:
        subprocess.run(["openssl", *arguments], check=True, capture_output=True, cwd=directory)

    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")  # EC: made in milliseconds
    openssl("req", "-x509", *key, "-days", "2", "-subj", "/CN=cqels test CA", "-keyout", "ca.key", "-out", "ca.crt")
    for name, extension in (("server", "subjectAltName=DNS:localhost"), ("client", "extendedKeyUsage=clientAuth")):
        openssl("req", *key, "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.csr")
        (directory / f"{name}.ext").write_text(extension + "\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
                "-extfile", f"{name}.ext", "-out", f"{name}.crt")
    return tuple(str(directory / name) for name in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key"))
