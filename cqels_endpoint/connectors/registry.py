"""The sources and sinks of a server: started, listed, replaced, stopped, and (unless the store is in
memory) kept in ``connectors.json`` beside the stored queries, so that a restart starts them again.

Every change is written durably (``engine.durable.write_durably``). An entry of the file that no
longer makes a connector (edited by hand, or after an upgrade) is logged and kept in the file,
never dropped; a file that cannot be read at all is moved aside to ``connectors.json.corrupt``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox

from cqels_endpoint.connectors.base import Connector, Sink, Source
from cqels_endpoint.connectors.specs import (
    SinkSpec,
    SourceSpec,
    SpecError,
    from_url,
    sink_from_json,
    source_from_json,
    to_json,
)
from cqels_endpoint.connectors.subscriptions import Subscriptions
from cqels_endpoint.engine import Engine
from cqels_endpoint.engine.durable import write_durably
from cqels_endpoint.runtime.streams import is_short_stream_name

log = logging.getLogger("cqels_endpoint.connectors")

FILE_NAME = "connectors.json"
FILE_FORMAT = 1
SOURCE = "source"
SINK = "sink"
ROLES = (SOURCE, SINK)


class UnknownConnector(KeyError):
    """No source or sink of that name."""

    def __str__(self) -> str:
        return self.args[0]


class Connectors:
    """The connectors of one engine. ``sources``/``sinks``: the transport class of each kind."""

    def __init__(
        self,
        engine: Engine,
        subscriptions: Subscriptions,
        stream_base: str,
        path: Path | None,
        sources: dict[str, Callable[..., Source]],
        sinks: dict[str, Callable[..., Sink]],
    ):
        self.engine = engine
        self.subscriptions = subscriptions
        self.stream_base = stream_base
        self.path = path
        self._transports = {SOURCE: sources, SINK: sinks}
        self._running: dict[str, dict[str, Connector]] = {SOURCE: {}, SINK: {}}
        self._unreadable: dict[str, list[dict]] = {SOURCE: [], SINK: []}  # file entries kept as they were
        # Serialises changes, so that the file is written in the order they were made.
        self._lock = threading.RLock()

    def spec(self, role: str, name: str, data: object) -> SourceSpec | SinkSpec:
        """The declaration ``data`` of a connector ``name`` (``SpecError`` naming what is wrong)."""
        return self._servable(role, source_from_json(name, data) if role == SOURCE else sink_from_json(name, data))

    def spec_from_flag(self, role: str, flag: str) -> SourceSpec | SinkSpec:
        """The declaration of a ``--source``/``--sink`` flag, ``NAME=URL`` (``specs.from_url``)."""
        name, equals, url = flag.partition("=")
        if not equals or not name or not url:
            raise SpecError(f"--{role} {flag!r}: give NAME=URL")
        return self._servable(role, from_url(name, url, sink=role == SINK))

    def _servable(self, role: str, spec: SourceSpec | SinkSpec) -> SourceSpec | SinkSpec:
        if role == SOURCE:
            self.stream_iri(spec.stream)
        if spec.kind not in self._transports[role]:
            raise SpecError(f'"kind": this server has no {spec.kind} {role}')
        return spec

    def put(self, spec: SourceSpec | SinkSpec, *, save: bool = True) -> tuple[Connector, bool]:
        """Starts the connector ``spec`` declares, in place of one of that name (stopped first);
        returns it and whether it is new."""
        role = SOURCE if isinstance(spec, SourceSpec) else SINK
        with self._lock:
            old = self._running[role].pop(spec.name, None)
            if old is not None:
                old.stop()
            self._unreadable[role] = [e for e in self._unreadable[role] if e.get("name") != spec.name]
            connector = self._make(role, spec)
            self._running[role][spec.name] = connector
            connector.start()
            if save:
                self._save()
        return connector, old is None

    def delete(self, role: str, name: str) -> None:
        with self._lock:
            connector = self._running[role].pop(name, None)
            if connector is None:
                raise UnknownConnector(f"no {role} is named {name!r}; GET /{role}s lists them")
            connector.stop()
            self._save()

    def get(self, role: str, name: str) -> Connector:
        with self._lock:
            connector = self._running[role].get(name)
        if connector is None:
            raise UnknownConnector(f"no {role} is named {name!r}; GET /{role}s lists them")
        return connector

    def listed(self, role: str) -> list[Connector]:
        with self._lock:
            return sorted(self._running[role].values(), key=lambda c: c.name)

    def close(self) -> None:
        """Stops every connector (the file keeps them): sources first, so no event comes after."""
        with self._lock:
            for role in ROLES:
                for connector in self._running[role].values():
                    connector.stop()
                self._running[role].clear()

    def stream_iri(self, name: str) -> str:
        """The stream a source's ``stream`` names: an absolute IRI, or a short name after the base."""
        value = self.stream_base + name if is_short_stream_name(name) else name
        try:
            return ox.NamedNode(value).value
        except ValueError:
            raise SpecError(f'"stream": {name!r} names no stream IRI ({value!r} is not an IRI)') from None

    def _make(self, role: str, spec: SourceSpec | SinkSpec) -> Connector:
        transport = self._transports[role][spec.kind]
        if role == SOURCE:
            return transport(spec, self.engine, self.stream_iri(spec.stream))
        return transport(spec, self.subscriptions)

    # ------------------------------------------------------------------ the file

    def restore(self) -> int:
        """Starts the connectors of the file again; returns how many it held."""
        if self.path is None or not self.path.exists():
            return 0
        try:
            data = json.loads(self.path.read_text("utf-8"))
            entries = {role: list(data[role + "s"]) for role in ROLES}
        except OSError as error:
            raise OSError(f"cannot read the connectors in {self.path}: {error}") from error
        except (ValueError, KeyError, TypeError) as error:
            aside = self.path.with_name(self.path.name + ".corrupt")
            os.replace(self.path, aside)
            log.error("cannot read the connectors in %s (%s): moved to %s; no connector restored", self.path, error, aside)
            return 0
        with self._lock:
            for role in ROLES:
                for entry in entries[role]:
                    try:
                        name = entry["name"]
                        self.put(self.spec(role, name, {k: v for k, v in entry.items() if k != "name"}), save=False)
                    except (SpecError, KeyError, TypeError) as error:
                        log.error("the %s %r of %s did not start again: %s; kept in the file", role,
                                  entry.get("name") if isinstance(entry, dict) else entry, self.path, error)
                        self._unreadable[role].append(entry)
        return sum(len(e) for e in entries.values())

    def _save(self) -> None:
        if self.path is None:
            return
        data: dict = {"format": FILE_FORMAT}
        for role in ROLES:
            running = [{"name": c.name, **to_json(c.spec)} for c in sorted(self._running[role].values(), key=lambda c: c.name)]
            data[role + "s"] = running + self._unreadable[role]
        write_durably(self.path, json.dumps(data, ensure_ascii=False, indent=1))
