"""The stored continuous queries of a server: started queries, templates and their instances,
kept in the engine and (unless the store is in memory) in ``queries.json``.

A query with parameters (``# @param ?var`` lines in its text, or names given beside it) is a
*template* (``algebra.parameters``): it is parsed and planned once, not started. Each instance binds
every parameter to a term and is named ``{name}/{instance}`` in the engine, its results and the
metrics. The instances of one template created together (no event in between) are evaluated by
one operator graph (``engine.instances``).

**Persistence.** After every change the stored queries and instances are written to the file (a
temporary file, synced, renamed over the old one, then the directory synced: a crash, even of the
machine, leaves the old or the new file, never half of one), and ``restore`` starts them again. A
stored query that no longer registers (after an upgrade, say) is kept with status ``failed`` and
its error, never dropped. The file replaced is kept as ``queries.json.bak`` (a hard link: no copy).
A file that cannot be read at start-up (edited by hand, damaged on disk) does not stop the server,
which would only fail again at every restart: it is moved to ``queries.json.corrupt``, the backup is
restored in its place (without the last change) or, lacking one, no query, and the log says which.

**Failures.** A started query the engine stopped while it ran (past its ``Limits``: ``Engine``) is
kept with status ``failed`` and ``reason`` until it is deleted; it is stored as before, so a restart
starts it again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cqels_endpoint.algebra.parameters import Template
from cqels_endpoint.engine.continuous import ContinuousQuery
from cqels_endpoint.engine.core import Engine
from cqels_endpoint.engine.durable import write_durably
from cqels_endpoint.engine.emission import term_from_json
from cqels_endpoint.errors import ArgumentError, CqelsError, QueryConflictError, StoreError, UnknownQueryError
from cqels_endpoint.query.parameters import declared_parameters

log = logging.getLogger("cqels_endpoint.engine")

FILE_NAME = "queries.json"
FILE_FORMAT = 1
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.~-]{0,199}\Z")
# Names under /queries/{name}/ that are paths of their own, not instances.
RESERVED = frozenset({"instances", "results"})


@dataclass(eq=False)
class Instance:
    """One instance of a template: its short name, the bindings as given (JSON) and its query."""

    name: str
    bindings: dict[str, dict]
    query: ContinuousQuery


@dataclass(eq=False)
class StoredQuery:
    """A query stored under ``name``: started (``query``), a template (``template``), or ``error``
    when it could not be started again on restore. ``given`` are the parameters named beside the
    text (the others are declared in it)."""

    name: str
    text: str
    r2s: str | None  # as requested; None: the engine's default (directional.query_r2s)
    mode: str
    given: tuple[str, ...] = ()
    dialect: str | None = None  # as requested; None: the engine's (query.dialects)
    template: Template | None = None
    query: ContinuousQuery | None = None
    instances: dict[str, Instance] = field(default_factory=dict)
    next_number: int = 1
    error: str | None = None
    # Instances read back from the file but not started (the template failed): kept for the file.
    dormant: list[dict] = field(default_factory=list)

    @property
    def params(self) -> tuple[str, ...]:
        """The template's parameters, in order (none for a started query)."""
        return () if self.template is None else self.template.parameters

    @property
    def status(self) -> str:
        if self.reason is not None:
            return "failed"
        return "template" if self.template is not None else "running"

    @property
    def reason(self) -> str | None:
        """Why it failed: it did not start again on restore, or the engine stopped it since."""
        if self.error is not None:
            return self.error
        failure = None if self.query is None else self.query.failure
        return None if failure is None else str(failure)


class QueryRegistry:
    """The stored queries of one app, in the engine and (unless ``path`` is None) on disk."""

    def __init__(self, engine: Engine, path: Path | None) -> None:
        self.engine = engine
        self.path = path
        self.stored: dict[str, StoredQuery] = {}
        # Serialises changes, so that the file is written in the order the changes were made.
        self._lock = threading.RLock()

    def put(
        self,
        name: str,
        text: str,
        r2s: str | None,
        mode: str,
        parameters: tuple[str, ...] = (),
        *,
        dialect: str | None = None,
        save: bool = True,
        replace: bool = False,
    ) -> StoredQuery:
        """Stores ``text`` as ``name``: a template when it declares parameters or ``parameters``
        names some (checked, not started), else a started query. With ``replace``, a query of that
        name is stopped (with its instances) once the new text has passed the checks of
        registration, so a text that does not parse or plan leaves it running."""
        with self._lock:
            if name in self.stored or name in self.engine.queries:
                if not replace:
                    raise QueryConflictError(
                        f"a query named {name!r} is already registered: DELETE /queries/{name} first, or PUT with ?replace=true"
                    )
                if parameters or declared_parameters(text):
                    self.engine.check_template(self.engine.template(text, parameters, dialect), r2s=r2s, mode=mode)
                else:
                    self.engine.check(text, r2s, mode, dialect)
                self._remove(name)
            if parameters or declared_parameters(text):
                template = self.engine.template(text, parameters, dialect)
                self.engine.check_template(template, r2s=r2s, mode=mode)
                stored = StoredQuery(name, text, r2s, mode, parameters, dialect, template=template)
            else:
                query = self.engine.register(text, name, r2s, mode, dialect=dialect)
                stored = StoredQuery(name, text, r2s, mode, parameters, dialect, query=query)
            self.stored[name] = stored
            if save:
                self._save()
            return stored

    def delete(self, name: str) -> None:
        with self._lock:
            self._remove(name)
            self._save()

    def _remove(self, name: str) -> None:
        stored = self.get(name)
        for instance in stored.instances.values():
            self.engine.unregister(instance.query.name)
        if stored.query is not None:
            self.engine.unregister(name)
        del self.stored[name]

    def listed(self) -> list[StoredQuery]:
        """Every stored query, as of one moment (never in the middle of a replacement)."""
        with self._lock:
            return list(self.stored.values())

    def get(self, name: str) -> StoredQuery:
        # Under the lock: a reader never sees a replacement half done (the old query gone, the new not in).
        with self._lock:
            stored = self.stored.get(name)
        if stored is None:
            raise UnknownQueryError(f"no query is stored as {name!r}; GET /queries lists them")
        return stored

    def add_instances(self, name: str, specs: list[dict], *, save: bool = True) -> list[Instance]:
        """Starts one instance per ``{"bindings": …, "name": …}``, all or none."""
        with self._lock:
            stored = self.get(name)
            if stored.error is not None:
                raise QueryConflictError(f"query {name!r} failed to start ({stored.error}); store it again")
            if stored.template is None:
                raise ArgumentError(f"query {name!r} declares no parameters ('# @param ?var' lines): it has no instances")
            planned: list[tuple[str, dict, dict]] = []
            number = stored.next_number
            for index, spec in enumerate(specs):
                where_in = f"instance {index}: " if len(specs) > 1 else ""
                short, number = self._instance_name(stored, spec, number, {p[0] for p in planned}, where_in)
                bindings = spec.get("bindings")
                if not isinstance(bindings, dict):
                    raise ArgumentError(f'{where_in}give "bindings": {{"var": {{"type": "uri", "value": …}}}}')
                missing = [p for p in stored.params if p not in bindings]
                if missing:
                    raise ArgumentError(f"{where_in}parameters not bound: {', '.join('?' + p for p in missing)}")
                extra = [v for v in bindings if v not in stored.params]
                if extra:
                    msg = f"{where_in}not parameters of {name!r}: {', '.join('?' + v for v in extra)} (it declares {', '.join('?' + p for p in stored.params)})"
                    raise ArgumentError(msg)
                try:
                    terms = {p: term_from_json(p, bindings[p]) for p in stored.params}
                except ValueError as error:
                    raise ArgumentError(f"{where_in}{error}") from None
                planned.append((short, {p: bindings[p] for p in stored.params}, terms))
            queries = self.engine.register_instances(
                stored.template,
                [(f"{name}/{short}", terms) for short, _bindings, terms in planned],
                stored.r2s,
                stored.mode,
                group=name,
            )
            for (short, bindings, _terms), query in zip(planned, queries):
                stored.instances[short] = Instance(short, bindings, query)
            started = [stored.instances[short] for short, *_ in planned]
            stored.next_number = number
            if save:
                self._save()
            return started

    def _instance_name(self, stored: StoredQuery, spec: object, number: int, taken: set, where_in: str) -> tuple[str, int]:
        if not isinstance(spec, dict):
            raise ArgumentError(f'{where_in}an instance is a JSON object {{"bindings": {{…}}, "name": …}}, not {spec!r}')
        given = spec.get("name")
        if given is None:
            while str(number) in stored.instances or str(number) in taken:
                number += 1
            return str(number), number + 1
        if not isinstance(given, str) or not NAME.match(given) or given in RESERVED:
            raise ArgumentError(f"{where_in}instance name {given!r}: use letters, digits, '_', '.', '~', '-' (not 'instances' or 'results')")
        if given in stored.instances or given in taken:
            raise QueryConflictError(f"{where_in}query {stored.name!r} already has an instance named {given!r}")
        return given, number

    def delete_instance(self, name: str, short: str) -> None:
        with self._lock:
            stored = self.get(name)
            instance = stored.instances.get(short)
            if instance is None:
                raise UnknownQueryError(f"query {name!r} has no instance {short!r}")
            self.engine.unregister(instance.query.name)
            del stored.instances[short]
            self._save()

    def close(self) -> None:
        """Stops every stored query (the file keeps them)."""
        with self._lock:
            for stored in self.stored.values():
                for instance in stored.instances.values():
                    self.engine.unregister(instance.query.name)
                if stored.query is not None:
                    self.engine.unregister(stored.name)
            self.stored.clear()

    # ------------------------------------------------------------------ the file

    def restore(self) -> int:
        """Starts the queries and instances of the file again; returns how many queries it held."""
        if self.path is None or not self.path.exists():
            return 0
        try:
            entries = _entries(self.path)
            damaged = False
        except OSError as error:  # not the content: unreadable to this user, a failing disk
            raise CqelsError(f"cannot read the stored queries in {self.path}: {error}") from error
        except (ValueError, KeyError, TypeError) as error:
            entries, damaged = self._set_aside(error), True
        with self._lock:
            for entry in entries:
                self._restore(entry)
            if damaged:
                self._save()
        return len(entries)

    def _set_aside(self, error: Exception) -> list[dict]:
        """Moves the unreadable file aside; the entries of its backup, or none."""
        aside = self.path.with_name(self.path.name + ".corrupt")
        os.replace(self.path, aside)
        backup = self.path.with_name(self.path.name + ".bak")
        try:
            entries = _entries(backup)
        except FileNotFoundError:
            log.error("cannot read the stored queries in %s (%s): moved to %s; no backup, no query restored", self.path, error, aside)
            return []
        except (ValueError, KeyError, TypeError) as backup_error:
            log.error("cannot read the stored queries in %s (%s) nor its backup %s (%s): moved to %s; no query restored",
                      self.path, error, backup, backup_error, aside)
            return []
        log.error("cannot read the stored queries in %s (%s): moved to %s; restored its backup %s, "
                  "which misses the last change made before it", self.path, error, aside, backup)
        return entries

    def _restore(self, entry: dict) -> None:
        name, instances = entry["name"], entry.get("instances", [])
        try:
            given = tuple(entry.get("parameters", ()))
            stored = self.put(
                name, entry["text"], entry.get("r2s"), entry.get("mode", "incremental"), given, dialect=entry.get("dialect"), save=False
            )
            stored.next_number = entry.get("next_instance", 1)
            if instances:
                self.add_instances(name, instances, save=False)
        except (CqelsError, StoreError, ValueError) as error:
            log.error("stored query %r did not start again: %s; kept as failed", name, error)
            stored = self.stored.pop(name, None)
            if stored is not None:  # the template started, an instance did not: none of it runs
                self._unregister_all(stored)
            failed = StoredQuery(
                name, entry["text"], entry.get("r2s"), entry.get("mode", "incremental"), tuple(entry.get("parameters", ())),
                entry.get("dialect"), error=str(error),
            )
            failed.dormant, failed.next_number = instances, entry.get("next_instance", 1)
            self.stored[name] = failed

    def _unregister_all(self, stored: StoredQuery) -> None:
        for instance in stored.instances.values():
            self.engine.unregister(instance.query.name)
        if stored.query is not None:
            self.engine.unregister(stored.name)

    def _save(self) -> None:
        if self.path is None:
            return
        entries = []
        for stored in self.stored.values():
            instances = [{"name": i.name, "bindings": i.bindings} for i in stored.instances.values()] or stored.dormant
            entries.append({
                "name": stored.name, "text": stored.text, "r2s": stored.r2s, "mode": stored.mode, "dialect": stored.dialect,
                "parameters": list(stored.given), "next_instance": stored.next_number, "instances": instances,
            })
        write_durably(self.path, json.dumps({"format": FILE_FORMAT, "queries": entries}, ensure_ascii=False, indent=1))


def _entries(path: Path) -> list[dict]:
    """The stored queries of a file written by ``_save``; ``ValueError``, ``KeyError`` or
    ``TypeError`` for anything else (``FileNotFoundError`` when there is none)."""
    entries = json.loads(path.read_text("utf-8"))["queries"]
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("text"), str) for e in entries):
        raise ValueError("expected a list of queries, each with a name and a text")
    return entries
