"""The ``cqels`` command line: one sub-command per job (``explain`` today).

Every flag has an environment twin named ``CQELS_<FLAG>`` (``--base-iri`` ↔ ``CQELS_BASE_IRI``);
a flag given on the command line wins over the environment. Exit codes: 0 success, 2 bad input
(a query that does not parse or cannot be planned, an unreadable file, a bad flag), 1 anything else.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from cqels_endpoint.errors import CqelsError, PlanError, QuerySyntaxError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cqels`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (QuerySyntaxError, PlanError) as error:
        print(f"cqels {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except CqelsError as error:
        print(f"cqels {args.command}: {error}", file=sys.stderr)
        return EXIT_FAILURE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cqels",
        description="A SPARQL 1.1 endpoint with continuous CQELS queries over RDF streams.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_explain(commands)
    return parser


# --------------------------------------------------------------------------- flags with env twins


def _env_name(flag: str) -> str:
    return "CQELS_" + flag.lstrip("-").replace("-", "_").upper()


def _option(parser: argparse.ArgumentParser, flag: str, help: str, **kwargs) -> None:
    """A valued flag whose default comes from its ``CQELS_*`` environment twin."""
    env = _env_name(flag)
    parser.add_argument(flag, default=os.environ.get(env, kwargs.pop("default", None)), help=f"{help} [env {env}]", **kwargs)


def _switch(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """A boolean flag; its environment twin accepts 1/true/yes/on and 0/false/no/off."""
    env = _env_name(flag)
    raw = os.environ.get(env, "").strip().lower()
    if raw not in _TRUE | _FALSE:
        parser.error(f"{env}={raw!r} is not a boolean; use 1/true/yes/on or 0/false/no/off")
    parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=raw in _TRUE, help=f"{help} [env {env}]")


# --------------------------------------------------------------------------- explain


def _add_explain(commands) -> None:
    from cqels_endpoint.algebra.passes import PASSES

    explain = commands.add_parser(
        "explain",
        help="print the algebra of a query, optimised, and its static/stream split",
        description="Print the SPARQL algebra of a (continuous) query as S-expressions: as translated, "
        "after the optimizer passes, and the split into stream patterns and static caches.",
    )
    explain.add_argument("query", metavar="FILE|-", help="the query file, or - to read standard input")
    _option(explain, "--base-iri", "resolve relative IRIs of the query against this IRI", metavar="IRI")
    _switch(explain, "--full-iris", "print IRIs in full instead of abbreviating them with the query's prefixes")
    _option(
        explain,
        "--passes",
        f"comma-separated optimizer passes to run, in order (default: all of {','.join(PASSES)})",
        metavar="NAMES",
        default=",".join(PASSES),
    )
    explain.set_defaults(handler=_explain)


def _explain(args: argparse.Namespace) -> int:
    from cqels_endpoint import parse_query
    from cqels_endpoint.algebra.explain import explain
    from cqels_endpoint.algebra.passes import PASSES

    rules = []
    for name in filter(None, (part.strip() for part in args.passes.split(","))):
        if name not in PASSES:
            print(f"cqels explain: unknown pass {name!r}; the passes are {', '.join(PASSES)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        rules.append(PASSES[name])
    text = _read(args.query)
    if text is None:
        return EXIT_BAD_INPUT
    query = parse_query(text, args.base_iri)
    print(explain(query, full_iris=args.full_iris, rules=tuple(rules)))
    return EXIT_OK


def _read(source: str) -> str | None:
    """The text of ``source`` (``-`` is standard input), or None after reporting why it cannot be read."""
    if source == "-":
        return sys.stdin.read()
    try:
        with open(source, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as error:
        print(f"cqels: cannot read {source}: {error}", file=sys.stderr)
        return None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cqels-endpoint")
    except PackageNotFoundError:
        return "(not installed)"


if __name__ == "__main__":
    sys.exit(main())
