"""The ``cqels`` command line: one module per group of sub-commands.

``queries`` (explain, register, watch), ``server`` (serve), ``data`` (load, push, replay), ``jobs``
(spark-job); the
HTTP client the client commands share is ``client``, the table ``watch`` prints is ``watch``,
the CSV mappings of ``replay`` are ``replay``.

Every flag has an environment twin named ``CQELS_<FLAG>`` (``--base-iri`` ↔ ``CQELS_BASE_IRI``);
a flag given on the command line wins over the environment. Exit codes: 0 success, 2 bad input
(a query that does not parse or cannot be planned, an unreadable file, a bad flag), 1 anything else.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cqels_endpoint.cli import data, jobs, queries, server
from cqels_endpoint.cli.client import ServerError
from cqels_endpoint.cli.common import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from cqels_endpoint.errors import CqelsError, PlanError, QuerySyntaxError, StoreError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "EXIT_OK", "build_parser", "main"]



def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cqels`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (QuerySyntaxError, PlanError) as error:
        print(f"cqels {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ServerError as error:
        # A client command's request refused by the server: a 4xx is the input's fault.
        print(f"cqels {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT if 400 <= error.status < 500 else EXIT_FAILURE
    except (CqelsError, StoreError) as error:  # the store's errors are its own (static_store.errors)
        print(f"cqels {args.command}: {error}", file=sys.stderr)
        return EXIT_FAILURE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cqels",
        description="A SPARQL 1.1 endpoint with continuous CQELS queries over RDF streams.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    queries.add_explain(commands)
    server.add_serve(commands)
    data.add_load(commands)
    data.add_push(commands)
    data.add_replay(commands)
    queries.add_register(commands)
    queries.add_watch(commands)
    jobs.add_spark_job(commands)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cqels-endpoint")
    except PackageNotFoundError:
        return "(not installed)"
