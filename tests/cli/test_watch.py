"""``cqels watch``'s table (``cli/watch.py``) for emissions with no rows: a cqels2 directional
query emits one per anchor whose result is empty (CQELS-QL 2.0 §3.2), and its early estimates may
be empty too. The whole command against a server: tests/http/test_http_results.py."""

from __future__ import annotations

from cqels_endpoint.cli.watch import Table

HEAD = {"query": "q", "r2s": "RSTREAM"}


def test_an_empty_select_anchor_is_one_row_saying_so():
    table = Table()
    early = HEAD | {"time": 0, "anchor": 0, "final": False, "head": {"vars": ["a", "v"]}, "results": {"bindings": []}}
    final = early | {"final": True, "results": {"bindings": [{"a": {"type": "uri", "value": "http://ex.org/x"}}]}}
    assert table.rows(early).splitlines() == ["time  r2s            ?a         ?v", "0     RSTREAM early  (no rows)"]
    # The wider IRI widens ?a: the header again, then the row.
    assert table.rows(final).splitlines() == ["time  r2s            ?a                 ?v", "0     RSTREAM final  <http://ex.org/x>"]


def test_an_empty_construct_anchor_is_one_row_saying_so():
    emission = HEAD | {"time": 1000, "anchor": 1000, "final": True, "triples": ""}
    assert Table().rows(emission).splitlines() == ["time  r2s            triple", "1000  RSTREAM final  (none)"]
