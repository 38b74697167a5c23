"""Parse time of a 200-line continuous query (issue 2 asks for under 20 ms after warm-up).

    python benchmarks/parser_speed.py [--lines 200] [--repeat 50]

Prints the cold first parse (grammar load included), then min / median / p90 of warm parses, and
the same for the translation to algebra and the optimiser.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time


def build_query(lines: int, dense: bool = True) -> str:
    """A query of about ``lines`` lines: prefixes, a stream block, static joins, filters.

    ``dense`` lines carry two predicates and a typed literal (~64 characters); the others one
    triple pattern (~35 characters, as in the example queries).
    """
    head = [
        "PREFIX lv: <http://deri.org/floorplan/>",
        "PREFIX foaf: <http://xmlns.com/foaf/0.1/>",
        "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>",
        "SELECT ?person ?name (COUNT(?loc) AS ?n) WHERE {",
        "  STREAM <http://deri.org/streams/rfid> [RANGE 30s SLIDE 5s] {",
    ]
    body = []
    i = 0
    while len(head) + len(body) + 8 < lines:
        if dense:
            body.append(f"    ?person lv:detectedAt ?loc{i} ; lv:reading{i} \"{i}\"^^xsd:integer .")
        else:
            body.append(f"    ?person lv:detectedAt ?loc{i} .")
        i += 1
        if i % 4 == 0:
            body.append(f"    ?loc{i} lv:connected [ lv:name \"room {i}\"@en ] .")
    middle = [
        "  }",
        "  GRAPH <http://deri.org/floorplan/> { ?loc lv:name ?name }",
        "  OPTIONAL { ?person foaf:name ?pname FILTER (STRLEN(?pname) > 3) }",
        "  FILTER (?loc != <http://deri.org/floorplan/void> && REGEX(?name, \"^R\", \"i\"))",
        "}",
        "GROUP BY ?person ?name",
        "HAVING (COUNT(?loc) > 1)",
        "ORDER BY DESC(?n) LIMIT 10",
    ]
    return "\n".join(head + body + middle)


def timed(fn, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def report(label: str, samples: list[float]) -> None:
    samples = sorted(samples)
    p90 = samples[int(0.9 * (len(samples) - 1))]
    print(f"{label:<22} min {samples[0]:7.2f} ms   median {statistics.median(samples):7.2f} ms   p90 {p90:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()

    text = build_query(args.lines)
    typical = build_query(args.lines, dense=False)
    print(f"machine: {platform.processor() or platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}; query: {text.count(chr(10)) + 1} lines, {len(text)} chars")

    start = time.perf_counter()
    from cqels_endpoint import parse_query

    query = parse_query(text)
    print(f"cold first parse       {(time.perf_counter() - start) * 1000:7.2f} ms (imports and grammar load included)")
    report("parse_query (dense)", timed(lambda: parse_query(text), args.repeat))
    print(f"typical query: {typical.count(chr(10)) + 1} lines, {len(typical)} chars")
    report("parse_query (typical)", timed(lambda: parse_query(typical), args.repeat))

    from cqels_endpoint.algebra.passes import optimize
    from cqels_endpoint.algebra.translate import to_algebra

    report("to_algebra", timed(lambda: to_algebra(query), args.repeat))
    algebra = to_algebra(query)
    report("optimize", timed(lambda: optimize(algebra), args.repeat))


if __name__ == "__main__":
    main()
