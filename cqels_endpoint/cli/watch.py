"""``cqels watch``: a running server's emissions of one query, printed as a text table as they come.

The client reads ``GET /queries/{name}/results`` as NDJSON (``http/results.py``) and prints one row
per solution: the emission time (ms), its R2S kind (with ``final`` or ``early`` for an anchor of a
directional window), then one column per variable (SELECT), the
answer (ASK) or one N-Triples triple per row (CONSTRUCT). Columns widen as wider values arrive;
the header is printed again whenever they do, so every row lines up with the header above it.

>>> table = Table()
>>> print(table.rows({"time": 5, "r2s": "ISTREAM", "head": {"vars": ["who"]},
...                   "results": {"bindings": [{"who": {"type": "uri", "value": "http://ex.org/ann"}}]}}))
time  r2s      ?who
5     ISTREAM  <http://ex.org/ann>
>>> print(table.rows({"time": 15, "r2s": "ISTREAM", "head": {"vars": ["who"]},
...                   "results": {"bindings": [{"who": {"type": "literal", "value": "7",
...                               "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}}))
15    ISTREAM  7
>>> print(table.rows({"time": 20, "r2s": "ISTREAM", "anchor": 20, "final": False, "head": {"vars": ["who"]},
...                   "results": {"bindings": [{"who": {"type": "literal", "value": "8",
...                               "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}}))
time  r2s            ?who
20    ISTREAM early  8
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator

from cqels_endpoint.cli.client import Client

_XSD = "http://www.w3.org/2001/XMLSchema#"
# Literals of these types read unambiguously without quotes and datatype.
_BARE = {f"{_XSD}integer", f"{_XSD}decimal", f"{_XSD}double", f"{_XSD}boolean"}


def emissions(client: Client, name: str) -> Iterator[dict]:
    """The emissions of query ``name`` (an instance: ``template/instance``) as JSON objects
    (docs/ARCHITECTURE.md, "Emissions (R2S)"), until the server ends the stream;
    ``client.ServerError`` for a refusal (404: unknown query)."""
    path = f"/queries/{urllib.parse.quote(name, safe='/')}/results"
    for line in client.lines(path, headers={"Accept": "application/x-ndjson"}):
        if line.strip():  # empty lines are the server's keep-alives
            yield json.loads(line)


class Table:
    """Formats emissions as aligned rows; remembers the columns and widths printed so far."""

    def __init__(self) -> None:
        self._header: list[str] = []
        self._widths: list[int] = []

    def rows(self, emission: dict) -> str:
        """The lines of one emission, with the header first when the columns changed or widened."""
        header, cells = _columns(emission)
        header = ["time", "r2s", *header]
        kind = emission["r2s"]
        if "final" in emission:  # a directional window's anchor: its exact result, or an early one
            kind += " final" if emission["final"] else " early"
        cells = [[str(emission["time"]), kind, *row] for row in cells]
        widths = [len(title) for title in header]
        if header == self._header:
            widths = [max(old, new) for old, new in zip(self._widths, widths)]
        for row in cells:
            widths = [max(width, len(cell)) for width, cell in zip(widths, row)]
        lines = []
        if header != self._header or widths != self._widths:
            self._header, self._widths = header, widths
            lines.append(_line(header, widths))
        lines.extend(_line(row, widths) for row in cells)
        return "\n".join(lines)


def _line(cells: list[str], widths: list[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()


def _columns(emission: dict) -> tuple[list[str], list[list[str]]]:
    if "boolean" in emission:
        return ["answer"], [["true" if emission["boolean"] else "false"]]
    if "triples" in emission:
        triples = [line.rstrip().removesuffix(" .") for line in emission["triples"].splitlines() if line.strip()]
        return ["triple"], [[triple] for triple in triples] or [["(none)"]]
    variables = emission["head"]["vars"]
    bindings = emission["results"]["bindings"]
    if not bindings:
        return [f"?{var}" for var in variables], [["(no rows)", *[""] * (len(variables) - 1)]] if variables else [[]]
    return [f"?{var}" for var in variables], [[term(b[var]) if var in b else "" for var in variables] for b in bindings]


def term(binding: dict) -> str:
    """A SPARQL JSON binding in N-Triples-like text; numbers and booleans bare."""
    kind, value = binding["type"], binding["value"]
    if kind == "uri":
        return f"<{value}>"
    if kind == "bnode":
        return f"_:{value}"
    if kind == "triple":
        return "<< " + " ".join(term(value[part]) for part in ("subject", "predicate", "object")) + " >>"
    text = json.dumps(value, ensure_ascii=False)
    if "xml:lang" in binding:
        return f"{text}@{binding['xml:lang']}"
    datatype = binding.get("datatype")
    if datatype in _BARE:
        return value
    return f"{text}^^<{datatype}>" if datatype else text
