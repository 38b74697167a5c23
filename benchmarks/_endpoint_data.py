"""The generated dataset of ``endpoint.py``: BSBM-like products, offers, reviews and vendors.

``dataset(triples, cache_dir)`` writes exactly ``triples`` quads as N-Quads once (seeded, so every
run sees the same data) and returns the file. Four named graphs:

- ``products``: a class hierarchy (``rdfs:subClassOf`` chains three levels under ``ROOT_CLASS``,
  four classes wide at each level) and the products: a leaf class as ``rdf:type``, a unique
  label, a producer, three integer properties and a weight (``xsd:double``);
- ``offers``: 1–7 offers per product: product, vendor, price (``xsd:decimal``), validTo
  (``xsd:date``), delivery days;
- ``reviews``: 0–5 reviews per product: reviewFor, reviewer, title, usually a rating (1–10) and
  usually an English text;
- ``vendors``: vendors and producers, each with a label and a country.

The file ends where the count is reached, possibly in the middle of the last product. ``Focus``
names the IRIs the queries use; its product sits in the middle of the products and always has 4
offers and 3 reviews, so every query hits.
"""

from __future__ import annotations

import itertools
import os
import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

BENCH = "http://bench.example/"
VOCAB = BENCH + "vocab/"
GRAPHS = {name: f"{BENCH}graph/{name}" for name in ("products", "offers", "reviews", "vendors")}
ROOT_CLASS = f"{BENCH}class/ProductType"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
XSD = "http://www.w3.org/2001/XMLSchema#"

TRIPLES_PER_PRODUCT = 45  # about: 7 product triples, 4 offers of 6, 2.5 reviews of 5.7
FOCUS_OFFERS = 4
FOCUS_REVIEWS = 3
COUNTRIES = ("US", "GB", "DE", "FR", "JP", "CN", "RU", "ES", "AT", "KR")
WORDS = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "amber", "birch", "cedar", "dune",
]
DATES = [(date(2024, 1, 1) + timedelta(days=d)).isoformat() for d in range(730)]


@dataclass(frozen=True)
class Focus:
    """The IRIs and label of one product of the dataset of a given size, for the queries."""

    product: str
    label: str
    producer: str


def product_count(triples: int) -> int:
    return max(20, triples // TRIPLES_PER_PRODUCT)


def producer_count(triples: int) -> int:
    return max(5, product_count(triples) // 20)


def vendor_count(triples: int) -> int:
    return max(5, product_count(triples) // 50)


def product_label(i: int) -> str:
    return f"{WORDS[i % len(WORDS)]} {WORDS[(i // len(WORDS)) % len(WORDS)]} {i}"


def focus(triples: int) -> Focus:
    i = product_count(triples) // 2
    return Focus(f"{BENCH}product/{i}", product_label(i), f"{BENCH}producer/{i % producer_count(triples)}")


def dataset(triples: int, cache_dir: Path) -> Path:
    """The N-Quads file of ``triples`` quads, generated into ``cache_dir`` unless already there."""
    path = cache_dir / f"bsbm-{triples}.nq"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with partial.open("w", encoding="utf-8") as out:
            written = 0
            for chunk in _chunks(triples):
                chunk = chunk[: triples - written]
                out.write("".join(chunk))
                written += len(chunk)
                if written == triples:
                    break
        os.replace(partial, path)
    return path


def graph_bodies(path: Path) -> dict[str, bytes]:
    """The quads of an N-Quads file of ``dataset`` as one N-Triples body per named graph.

    Every generated line ends with `` <graph> .``, so the graph is the line's second last token.
    """
    lines: dict[str, list[str]] = {}
    with path.open(encoding="utf-8") as quads:
        for line in quads:
            triple, graph, _dot = line.rsplit(" ", 2)
            lines.setdefault(graph[1:-1], []).append(triple + " .\n")
    return {graph: "".join(body).encode() for graph, body in lines.items()}


def _chunks(triples: int):
    """Lists of N-Quads lines: the schema, the vendors and producers, then one list per product."""
    rng = random.Random(20240501)
    products, producers, vendors = product_count(triples), producer_count(triples), vendor_count(triples)
    focus_index = products // 2
    persons = max(10, products // 2)
    g = {name: f" <{iri}> .\n" for name, iri in GRAPHS.items()}
    v = VOCAB
    yield _class_hierarchy(g["products"])
    companies = []
    for kind, count in (("vendor", vendors), ("producer", producers)):
        for i in range(count):
            s = f"<{BENCH}{kind}/{i}>"
            companies += [
                f"{s} <{RDF_TYPE}> <{v}{kind.title()}>{g['vendors']}",
                f'{s} <{RDFS}label> "{kind} {i}"{g["vendors"]}',
                f"{s} <{v}country> <{BENCH}country/{COUNTRIES[rng.randrange(len(COUNTRIES))]}>{g['vendors']}",
            ]
    yield companies
    leaves = _leaf_classes()
    offer = review = 0
    for i in itertools.count():  # past the estimate when the random counts fall short
        p = f"<{BENCH}product/{i}>"
        lines = [
            f"{p} <{RDF_TYPE}> <{leaves[rng.randrange(len(leaves))]}>{g['products']}",
            f'{p} <{RDFS}label> "{product_label(i)}"{g["products"]}',
            f"{p} <{v}producer> <{BENCH}producer/{i % producers}>{g['products']}",
        ]
        for n in (1, 2, 3):
            lines.append(f'{p} <{v}productPropertyNumeric{n}> "{rng.randrange(1, 2000)}"^^<{XSD}integer>{g["products"]}')
        lines.append(f'{p} <{v}weight> "{rng.uniform(0.1, 50):.3f}"^^<{XSD}double>{g["products"]}')
        for _ in range(FOCUS_OFFERS if i == focus_index else rng.randint(1, 7)):
            o = f"<{BENCH}offer/{offer}>"
            cents = rng.randrange(500, 1_000_000)
            lines += [
                f"{o} <{RDF_TYPE}> <{v}Offer>{g['offers']}",
                f"{o} <{v}product> {p}{g['offers']}",
                f"{o} <{v}vendor> <{BENCH}vendor/{rng.randrange(vendors)}>{g['offers']}",
                f'{o} <{v}price> "{cents // 100}.{cents % 100:02d}"^^<{XSD}decimal>{g["offers"]}',
                f'{o} <{v}validTo> "{DATES[rng.randrange(len(DATES))]}"^^<{XSD}date>{g["offers"]}',
                f'{o} <{v}deliveryDays> "{rng.randint(1, 21)}"^^<{XSD}integer>{g["offers"]}',
            ]
            offer += 1
        for _ in range(FOCUS_REVIEWS if i == focus_index else rng.randint(0, 5)):
            r = f"<{BENCH}review/{review}>"
            lines += [
                f"{r} <{RDF_TYPE}> <{v}Review>{g['reviews']}",
                f"{r} <{v}reviewFor> {p}{g['reviews']}",
                f"{r} <{v}reviewer> <{BENCH}person/{rng.randrange(persons)}>{g['reviews']}",
                f'{r} <{v}title> "{" ".join(rng.choices(WORDS, k=3))}"{g["reviews"]}',
            ]
            if rng.random() < 0.9:
                lines.append(f'{r} <{v}rating> "{rng.randint(1, 10)}"^^<{XSD}integer>{g["reviews"]}')
            if rng.random() < 0.8:
                lines.append(f'{r} <{v}text> "{" ".join(rng.choices(WORDS, k=rng.randint(8, 20)))}"@en{g["reviews"]}')
            review += 1
        yield lines


def _classes() -> list[tuple[str, str]]:
    """(class, parent) pairs: three levels of four classes each under the root."""
    pairs, level = [], [ROOT_CLASS]
    for _depth in range(3):
        level_below = []
        for parent in level:
            for k in range(1, 5):
                child = f"{parent}_{k}" if parent != ROOT_CLASS else f"{BENCH}class/T{k}"
                pairs.append((child, parent))
                level_below.append(child)
        level = level_below
    return pairs


def _leaf_classes() -> list[str]:
    parents = {parent for _child, parent in _classes()}
    return [child for child, _parent in _classes() if child not in parents]


def _class_hierarchy(graph: str) -> list[str]:
    lines = [f"<{ROOT_CLASS}> <{RDF_TYPE}> <{RDFS}Class>{graph}"]
    for child, parent in _classes():
        lines += [
            f"<{child}> <{RDF_TYPE}> <{RDFS}Class>{graph}",
            f"<{child}> <{RDFS}subClassOf> <{parent}>{graph}",
            f'<{child}> <{RDFS}label> "{child.rsplit("/", 1)[1]}"{graph}',
        ]
    return lines
