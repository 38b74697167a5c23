"""Grammar-aware mutations of SPARQL / CQELS queries and of RDF and NDJSON bodies, for the fuzz tests.

A text is cut into tokens by a small SPARQL tokenizer that never fails (anything it does not know is
a one-character token; white space and comments are tokens too, so joining the tokens gives the
text back). ``mutate_query`` applies one to four token-level edits drawn from ``QUERY_MUTATIONS``:
delete, duplicate, swap, replace with a keyword or punctuation of the project's lark grammar or with
a term, insert a CQELS/RSP-QL clause or window, truncate at a token boundary, nest in braces, splice
a span from another query of the corpus, plus byte-level noise (odd code points, NUL, lone
surrogates). ``mutate_rdf`` does the same for RDF bodies, ``mutate_ndjson`` for NDJSON lines.

Everything is driven by a ``random.Random`` the caller seeds, so a run is reproducible.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from lark.lexer import PatternStr

from cqels_endpoint.query.parser import _GRAMMAR

ROOT = Path(__file__).resolve().parents[2]
W3C = ROOT / "tests" / "w3c-sparql"
EXAMPLE_QUERIES = ROOT / "examples" / "queries"
EXAMPLE_DATA = ROOT / "examples" / "data"

# Queries in the style of CQELS-QL 2.0 (bare stream names, directional windows, EMIT/LATENESS, SEQ,
# WITH DEPTH … CACHE) and near misses of it: seeds whose mutations cross the new grammar's edges.
CQELS_QL2_SEEDS = (
    "REGISTER QUERY HighTemperature AS SELECT ?sensor ?temp FROM STREAM Sensors [NOW] "
    "WHERE { STREAM Sensors { ?sensor ex:temperature ?temp . } FILTER(?temp > 30) }",
    "PREFIX ex: <http://example.org/> SELECT * FROM STREAM <http://ex.org/v> [FUTURE 20s STEP 1s EMIT ON_CLOSE "
    "LATENESS 2s] WHERE { ?r ex:speed ?s }",
    "PREFIX ex: <http://example.org/> SELECT ?e1 FROM STREAM <http://ex.org/m> [RANGE 30s] "
    "WHERE { ?e1 ex:a ex:O . ?e2 ex:a ex:S . FILTER(SEQ(?e1 ; ?e2)) }",
    "PREFIX ex: <http://example.org/> SELECT ?p FROM STREAM <http://ex.org/r> [NOW] "
    "FROM <http://example.org/graph> WITH DEPTH 2 CACHE 5m WHERE { STREAM <http://ex.org/r> [NOW] { ?q ex:p ?p } }",
    "PREFIX : <http://ex.org/> SELECT ?v ?a ?b FROM NAMED WINDOW :short ON STREAM :s [RANGE 5s SLIDE 1s] "
    "FROM NAMED WINDOW :long ON :s [RANGE 60s TUMBLING] WHERE { WINDOW :short { ?v :x ?a } WINDOW :long { ?v :x ?b } }",
    "SELECT (MEDIAN(DISTINCT ?x) AS ?m) WHERE { STREAM [TRIPLES 100] ?s { ?s <http://ex.org/p> ?x } } GROUP BY ?s",
)

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>\#[^\n]*)
    | (?P<string>'''.*?(?:'''|\Z)|\"\"\".*?(?:\"\"\"|\Z)|'(?:[^'\\\n]|\\.)*'?|"(?:[^"\\\n]|\\.)*"?)
    | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    | (?P<var>[?$]\w+)
    | (?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
    | (?P<bnode>_:[\w.-]*)
    | (?P<number>[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))
    | (?P<name>(?:[^\W\d][\w.-]*)?:[\w.:%-]*|[^\W\d]\w*)
    | (?P<punct>\^\^|&&|\|\||!=|<=|>=|.)
    """,
    re.VERBOSE | re.DOTALL,
)
_SKIPPED = {"space", "comment"}


def tokenize(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` pairs whose texts join back to ``text``."""
    return [(match.lastgroup, match.group()) for match in _TOKEN.finditer(text)]


@cache
def grammar_words() -> tuple[str, ...]:
    """The keywords and punctuation of the project's grammar (its string terminals)."""
    return tuple(sorted({t.pattern.value for t in _GRAMMAR.lark.terminals if isinstance(t.pattern, PatternStr)}))


HUGE_NUMBERS = (
    "99999999999999999999999999999999", "-0", "1e999999", "-1E-99999", "0.0000000000000000000000000001",
    "18446744073709551616", "9223372036854775808", "1" * 400, "." + "9" * 300, "00000000000000000001",
)
ODD_TEXT = (
    "\x00", "\ud800", "\udfff", "\ufeff", "\u202e", "\ufffe", "\uffff", "\U0010ffff", "\U0001f600", "\u0301",
    "\u00e9", "\t", "\r", "\x0b", "\x1f", "\x7f", "\u2028", "\\", "\\u0000", "\\U0010FFFF", "\\uD800", "\\x",
    "\\n", "%00", "%zz", "é", "İ", "ǅ", "ß", "\u0130", "\u212a",
)
TERMS = (
    "?x", "$y", "?", "?_", "?é", "_:b", "_:", "[]", "()", "a", "<http://ex.org/s>", "<>", "<#x>", "<rel/..>",
    "<http://a b>", "<http://ex.org/\\u0020>", "<http://[::1]:99999/>", "<mailto:x@y>", "ex:p", ":p", ":", "ex:",
    "ex:a.b", "ex:%41", "ex:\\~", "undeclared:x", '"s"', "'s'@en", '"1"^^xsd:integer', '"x"^^<http://ex.org/dt>',
    '"""long\nstring"""', "'''x'''", '"\\u00e9"', '"\\U0010FFFF"', '"\\uD800"', '"bad\\q"', "true", "false", "1",
    "1.5", "-2.5e3", ".5", "1.", "'x'@en-GB", "'x'@123", "'x'@", '"2020-01-01T00:00:00Z"^^xsd:dateTime',
    *HUGE_NUMBERS,
)
DURATIONS = (
    "30s", "500ms", "5m", "2h", "1d", "1w", "1h30m", "1 hour 30 minutes", "2 seconds", "PT30M", "PT1H30M", "P1D",
    "P1W", "0s", "0ms", "PT0S", "99999999999999999999999h", "1.5s", "30", "s", "PT", "P", "P1Y", "P1M", "-5s",
    "30 s", "30sec", "30 SECONDS", "999999999999999999999999999999w", "PT9999999999999999999H",
)
WINDOWS = tuple(
    f"[{spec}]"
    for spec in (
        "NOW", "ALL", "RANGE 30s", "RANGE 30s SLIDE 5s", "RANGE 1h STEP 5m", "RANGE 30s TUMBLING", "TRIPLES 10",
        "COUNT 1000", "TRIPLES 0", "COUNT 99999999999999999999999", "RANGE 0s", "RANGE 5s SLIDE 10s",
        "RANGE 1d SLIDE 1ms", "RANGE 99999999999999999999999h", "RANGE", "SIZE 30s", "RANGE 30", "NOW NOW", "",
        "FUTURE 20s STEP 1s EMIT ON_CLOSE LATENESS 2s", "SLIDE 30s STEP 10s",
    )
)


def _cqels_fragments(rng: random.Random) -> str:
    window = rng.choice(WINDOWS)
    stream = rng.choice(("<http://ex.org/s>", "?s", ":s", "ex:s", "<rel>", "Sensors", "<>"))
    group = rng.choice(("{ ?s ?p ?o }", "{ }", "{ ?s a <http://ex.org/C> . ?s ?p ?o }", "{ STREAM ?x [NOW] { } }"))
    return rng.choice((
        f"STREAM {stream} {window} {group}",
        f"STREAM {window} {stream} {group}",
        f"STREAM {window} {stream} {window} {group}",
        f"STREAM {stream} {group}",
        f"WINDOW {stream} {group}",
        f"FROM STREAM {stream} {window}",
        f"FROM NAMED WINDOW {stream} ON STREAM {stream} {window}",
        f"FROM NAMED WINDOW {stream} ON {stream} {window}",
        f"REGISTER {rng.choice(('ISTREAM', 'RSTREAM', 'DSTREAM', 'QUERY'))} {rng.choice(('<http://ex.org/q>', 'q1', 'q-1', 'ex:q'))} AS",
        f"[RANGE {rng.choice(DURATIONS)}]",
        f"[RANGE {rng.choice(DURATIONS)} {rng.choice(('SLIDE', 'STEP'))} {rng.choice(DURATIONS)}]",
        f"MEDIAN({rng.choice(('DISTINCT ', ''))}?x)",
        "(MEDIAN(?x) AS ?m)",
        window,
        rng.choice(DURATIONS),
    ))


def _significant(tokens: list[tuple[str, str]]) -> list[int]:
    return [i for i, (kind, _) in enumerate(tokens) if kind not in _SKIPPED]


def _word(rng: random.Random) -> str:
    word = rng.choice(grammar_words())
    return rng.choice((word, word.lower(), word.swapcase())) if rng.random() < 0.2 else word


def _term(rng: random.Random) -> str:
    return rng.choice(TERMS)


# Each mutation edits a token list in place; ``corpus`` (token lists of other texts) feeds the splice.
Mutation = Callable[[list, random.Random, list], None]


def _delete(tokens, rng, corpus) -> None:
    at = _significant(tokens)
    if at:
        start = rng.randrange(len(at))
        for i in reversed(at[start:start + rng.choice((1, 1, 1, 2, 3))]):
            del tokens[i]


def _duplicate(tokens, rng, corpus) -> None:
    at = _significant(tokens)
    if at:
        start = rng.randrange(len(at))
        span = tokens[at[start]:at[min(len(at) - 1, start + rng.choice((0, 0, 1, 4)))] + 1]
        tokens[at[start]:at[start]] = [*span, ("space", " ")] * rng.choice((1, 1, 2, 50))


def _swap(tokens, rng, corpus) -> None:
    at = _significant(tokens)
    if len(at) > 1:
        i, j = rng.sample(at, 2)
        tokens[i], tokens[j] = tokens[j], tokens[i]


def _replace(tokens, rng, corpus) -> None:
    at = _significant(tokens)
    if at:
        new = _word(rng) if rng.random() < 0.6 else _term(rng)
        tokens[rng.choice(at)] = ("punct", new)


def _insert(tokens, rng, corpus) -> None:
    new = rng.choice((_word, _term, _cqels_fragments, _cqels_fragments))(rng)
    at = rng.randrange(len(tokens) + 1)
    tokens[at:at] = [("space", " "), ("punct", new), ("space", " ")]


def _truncate(tokens, rng, corpus) -> None:
    if tokens:
        del tokens[rng.randrange(len(tokens)):]


def _nest(tokens, rng, corpus) -> None:
    at = _significant(tokens)
    if at:
        opener, closer = rng.choice((("{", "}"), ("(", ")"), ("[", "]"), ("{ {", "} }"), ("OPTIONAL {", "}"),
                                     ("FILTER(", ")"), ("<<", ">>"), ("NOT EXISTS {", "}"),
                                     ("STREAM <http://ex.org/s> [NOW] {", "}"), ("WINDOW :w {", "}")))
        # Mostly shallow: a parse costs 30-80 µs a token, so thousands of levels cost ~0.2 s each.
        depth = rng.choice((1, 1, 2, 3, 10, 50, 200)) if rng.random() < 0.98 else rng.choice((500, 1000))
        i = rng.choice(at)
        j = rng.choice([k for k in at if k >= i])
        closing = [("punct", " " + closer)] * depth if rng.random() < 0.9 else []  # sometimes left open
        tokens[j + 1:j + 1] = closing
        tokens[i:i] = [("punct", opener + " ")] * depth


def _splice(tokens, rng, corpus) -> None:
    other = rng.choice(corpus)
    if other:
        start = rng.randrange(len(other))
        span = other[start:start + rng.randint(1, 30)]
        at = rng.randrange(len(tokens) + 1)
        tokens[at:at] = span


def _noise(tokens, rng, corpus) -> None:
    """Byte-level noise: an odd code point, a random character, a flipped character, inside a token."""
    if not tokens:
        tokens.append(("punct", rng.choice(ODD_TEXT)))
        return
    i = rng.randrange(len(tokens))
    kind, text = tokens[i]
    at = rng.randrange(len(text) + 1)
    choice = rng.random()
    if choice < 0.5:
        new = rng.choice(ODD_TEXT)
    elif choice < 0.8:
        new = chr(rng.randrange(0x20, 0x7F))
    else:
        new = chr(rng.randrange(0x110000))
    tokens[i] = (kind, text[:at] + new + text[at + (choice >= 0.8):])


QUERY_MUTATIONS: tuple[Mutation, ...] = (
    _delete, _delete, _duplicate, _swap, _replace, _replace, _replace, _insert, _insert, _insert, _truncate, _nest,
    _splice, _noise, _noise,
)


def mutate_tokens(tokens: list[tuple[str, str]], rng: random.Random, corpus: list, mutations=QUERY_MUTATIONS,
                  rounds=(1, 1, 2, 2, 3, 4)) -> str:
    """Some mutations (as many as a draw from ``rounds``) of a copy of ``tokens``, joined back into a text."""
    tokens = list(tokens)
    for _ in range(rng.choice(rounds)):
        rng.choice(mutations)(tokens, rng, corpus)
    return "".join(text for _, text in tokens)


# --------------------------------------------------------------------------- the query corpus


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


@cache
def query_corpus() -> tuple[tuple[str, str], ...]:
    """``(kind, text)`` for every W3C query (``.rq``, kind "query") and update (``.ru``, "update") of
    the vendored suites, the example queries and the CQELS-QL 2 near misses, in a stable order."""
    files = sorted([*W3C.rglob("*.rq"), *W3C.rglob("*.ru"), *EXAMPLE_QUERIES.glob("*.rq")])
    texts = [("query" if path.suffix == ".rq" else "update", _read(path)) for path in files]
    return (*texts, *(("query", seed) for seed in CQELS_QL2_SEEDS))


# --------------------------------------------------------------------------- RDF and NDJSON bodies

RDF_WORDS = (
    "@prefix", "@base", "PREFIX", "BASE", "GRAPH", "a", ".", ";", ",", "[", "]", "(", ")", "{", "}", "^^", "<<", ">>",
    "{|", "|}", "~", "@en", "@", "_:b", "_:", "true", "false", "<>", "<http://ex.org/s>", "ex:p", ":",
    '"x"', "'''x", '"""', "1", "1.", "-.5e-3", "#", "\n", "\r\n", "\\u0000", '"\\uD800"',
    '<http://www.w3.org/ns/prov#generatedAtTime>', '"2020-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
    '"99999-99-99T99:99:99Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
    '"-999999999-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
    "<rdf:RDF>", "</rdf:RDF>", "<rdf:Description rdf:about='x'>", "</rdf:Description>", "<!DOCTYPE x>", "<?xml?>",
    '<!ENTITY e "&e;&e;">', "&e;", "&amp;", "<![CDATA[", "]]>", "rdf:resource=", "xmlns:rdf=",
)


def _rdf_replace(tokens, rng, corpus) -> None:
    at = _significant(tokens)
    if at:
        tokens[rng.choice(at)] = ("punct", rng.choice(RDF_WORDS + TERMS))


def _rdf_insert(tokens, rng, corpus) -> None:
    at = rng.randrange(len(tokens) + 1)
    tokens[at:at] = [("space", " "), ("punct", rng.choice(RDF_WORDS + TERMS)), ("space", " ")]


RDF_MUTATIONS: tuple[Mutation, ...] = (
    _delete, _duplicate, _swap, _rdf_replace, _rdf_replace, _rdf_insert, _rdf_insert, _truncate, _splice, _noise,
    _noise,
)


def mutate_rdf(text: str, rng: random.Random, corpus: list) -> str:
    """A token-level mutation of an RDF body (Turtle, N-Triples, TriG, RDF/XML): mostly one edit, so
    that a good share of the bodies is still read and reaches the engine or the store."""
    return mutate_tokens(tokenize(text), rng, corpus, RDF_MUTATIONS, rounds=(0, 1, 1, 1, 1, 2))


NDJSON_TIMES = (
    1000, 0, -1, 2**63, 2**64, 10**30, 1.5, True, None, "2020-01-01T00:00:00Z", "2020-13-01T00:00:00Z", "x", "",
    "99999-01-01T00:00:00Z", [], {}, "1970-01-01T00:00:00", "\ud800",
)


def mutate_ndjson(lines: list[dict], rng: random.Random, corpus: list) -> str:
    """An NDJSON body from ``lines`` (``{"time", "data"}`` objects), mutated at the JSON level (a
    key dropped or added, an odd time, data mutated as RDF) or the text level (a line cut, noise)."""
    out = []
    for line in lines:
        item = dict(line)
        roll = rng.random()
        if roll < 0.3:
            item["data"] = mutate_rdf(item["data"], rng, corpus)
        elif roll < 0.4:
            item["time"] = rng.choice(NDJSON_TIMES)
        elif roll < 0.45:
            item.pop(rng.choice(("time", "data")), None)
        elif roll < 0.5:
            item[rng.choice(("extra", "Data", ""))] = 1
        elif roll < 0.55:
            item["data"] = rng.choice((1, None, ["x"], {"a": 1}, ""))
        text = json.dumps(item, ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.1:
            text = mutate_tokens(tokenize(text), rng, corpus, (_truncate, _noise, _delete, _duplicate))
        out.append(text)
    if rng.random() < 0.1:
        out.insert(rng.randrange(len(out) + 1), rng.choice(("", "   ", "[]", "null", "{}", "\x00", '{"data": "')))
    return "\n".join(out) + rng.choice(("\n", "", "\r\n"))


# --------------------------------------------------------------------------- figures

FIGURES = ROOT / "benchmarks" / "results" / "fuzz.md"
_FIGURES_TITLE = (
    "# Fuzzing figures\n\nWritten by the slow tests of `tests/fuzz/` (each rewrites its own section), "
    "for the Reliability table of `benchmarks/README.md`.\n"
)


def record_figures(section: str, lines: list[str]) -> None:
    """With ``CQELS_FUZZ_FIGURES=1``, write ``lines`` as the section ``## section`` of
    ``benchmarks/results/fuzz.md``, keeping the other sections, with the date and the machine's load
    (figures from a loaded machine are slower). Without it a test run leaves the checkout clean."""
    if os.environ.get("CQELS_FUZZ_FIGURES") != "1":
        return
    sections: dict[str, str] = {}
    if FIGURES.exists():
        for part in FIGURES.read_text(encoding="utf-8").split("\n## ")[1:]:
            title, _, body = part.partition("\n")
            sections[title] = body.strip()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    stamp = f"- run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {load}, {os.cpu_count()} CPUs"
    sections[section] = "\n".join([*lines, stamp])
    text = _FIGURES_TITLE + "".join(f"\n## {title}\n\n{body}\n" for title, body in sorted(sections.items()))
    FIGURES.write_text(text, encoding="utf-8")
