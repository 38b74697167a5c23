"""``cqels explain``, ``cqels register`` and ``cqels watch``: queries, offline and on a running server."""

from __future__ import annotations

import argparse
import sys

from cqels_endpoint.cli.common import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, client, client_options, dialect_option, option, read_source, switch


def add_explain(commands) -> None:
    from cqels_endpoint.algebra.passes import PASSES

    explain = commands.add_parser(
        "explain",
        help="print the algebra of a query, optimised, and its static/stream split",
        description="Print the SPARQL algebra of a (continuous) query as S-expressions: as translated, "
        "after the optimizer passes, and the split into stream patterns and static caches.",
    )
    explain.add_argument("query", metavar="FILE|-", help="the query file, or - to read standard input")
    option(explain, "--base-iri", "resolve relative IRIs of the query against this IRI", metavar="IRI")
    switch(explain, "--full-iris", "print IRIs in full instead of abbreviating them with the query's prefixes")
    option(
        explain,
        "--passes",
        f"comma-separated optimizer passes to run, in order (default: all of {','.join(PASSES)})",
        metavar="NAMES",
        default=",".join(PASSES),
    )
    dialect_option(explain, "auto")
    explain.set_defaults(handler=_explain)


def _explain(args: argparse.Namespace) -> int:
    from cqels_endpoint import parse_query
    from cqels_endpoint.algebra.passes import PASSES
    from cqels_endpoint.plan.explain import explain_query

    rules = []
    for name in filter(None, (part.strip() for part in args.passes.split(","))):
        if name not in PASSES:
            print(f"cqels explain: unknown pass {name!r}; the passes are {', '.join(PASSES)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        rules.append(PASSES[name])
    text = read_source(args.query)
    if text is None:
        return EXIT_BAD_INPUT
    query = parse_query(text, args.base_iri)
    print(explain_query(query, full_iris=args.full_iris, rules=tuple(rules), dialect=args.dialect))
    return EXIT_OK


def add_register(commands) -> None:
    register = commands.add_parser(
        "register",
        help="store a continuous query on a running server (PUT /queries/NAME)",
        description="Send the query in FILE ('-' for stdin) to a running 'cqels serve' as NAME. A query with "
        "'# @param ?var' lines is a template: POST /queries/NAME/instances starts instances of it.",
    )
    register.add_argument("name", metavar="NAME", help="the query's name: letters, digits, '_', '.', '~', '-'")
    register.add_argument("file", metavar="FILE", help="the query text, '-' for stdin")
    option(register, "--r2s", "ISTREAM, RSTREAM or DSTREAM (default: the query's REGISTER keyword, else ISTREAM; RSTREAM for a cqels2 directional query)",
            metavar="R")
    option(register, "--mode", "incremental or recompute (the oracle)", choices=("incremental", "recompute"),
            default="incremental")
    dialect_option(register, "the server's --dialect")
    client_options(register)
    register.set_defaults(handler=_register)


def _register(args: argparse.Namespace) -> int:
    from urllib.parse import quote

    from cqels_endpoint.cli.client import ServerError

    text = read_source(args.file)
    if text is None:
        return EXIT_BAD_INPUT
    params = {"mode": args.mode} | ({"r2s": args.r2s} if args.r2s else {}) | ({"dialect": args.dialect} if args.dialect else {})
    try:
        answer = client(args).json(
            "PUT", f"/queries/{quote(args.name, safe='')}", body=text.encode("utf-8"),
            headers={"Content-Type": "application/sparql-query"}, params=params,
        )
    except ServerError as error:
        where = f" (line {error.line})" if error.line else ""
        print(f"cqels register: {error}{where}", file=sys.stderr)
        return EXIT_BAD_INPUT if 400 <= error.status < 500 else EXIT_FAILURE
    parameters = answer["parameters"]
    kind = f"a template with parameters {', '.join('?' + p for p in parameters)}" if parameters else answer["r2s"]
    print(f"cqels register: stored {answer['name']} ({kind}, {answer['mode']}, {answer['dialect']})")
    return EXIT_OK


def add_watch(commands) -> None:
    watch = commands.add_parser(
        "watch",
        help="print a registered query's emissions as a table, as they arrive",
        description="Follow GET /queries/NAME/results of a running server and print one table row per "
        "solution: time (ms), R2S kind, then the variables. Stops after --limit emissions, when the server "
        "ends the stream, or on Ctrl-C.",
    )
    watch.add_argument("name", metavar="NAME", help="the query's name (an instance: TEMPLATE/INSTANCE)")
    client_options(watch, writes=False)
    option(watch, "--limit", "stop after this many emissions", type=int, metavar="N")
    watch.set_defaults(handler=_watch)


def _watch(args: argparse.Namespace) -> int:
    from cqels_endpoint.cli.watch import Table, emissions

    limit = args.limit
    if limit is not None and limit < 1:
        print(f"cqels watch: --limit must be at least 1, not {limit}", file=sys.stderr)
        return EXIT_BAD_INPUT
    table, seen = Table(), 0
    try:
        for emission in emissions(client(args), args.name):
            print(table.rows(emission), flush=True)
            seen += 1
            if seen == limit:
                return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_OK
    print(f"cqels watch: the server ended the stream of {args.name!r} after {seen} emission(s)", file=sys.stderr)
    return EXIT_FAILURE
