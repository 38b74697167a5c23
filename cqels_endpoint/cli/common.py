"""What every sub-command shares: exit codes, flags with ``CQELS_*`` environment twins, reading inputs."""

from __future__ import annotations

import argparse
import os
import sys

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}



def _env_name(flag: str) -> str:
    return "CQELS_" + flag.lstrip("-").replace("-", "_").upper()


def option(parser: argparse.ArgumentParser, flag: str, help: str, **kwargs) -> None:
    """A valued flag whose default comes from its ``CQELS_*`` environment twin."""
    env = _env_name(flag)
    parser.add_argument(flag, default=os.environ.get(env, kwargs.pop("default", None)), help=f"{help} [env {env}]", **kwargs)


def dialect_option(parser, default: str) -> None:
    """``--dialect``: what a continuous query means (``query.dialects``)."""
    from cqels_endpoint.config import DIALECTS

    option(
        parser, "--dialect", f"auto (CQELS-QL 2.0 for REGISTER QUERY Name AS, else CQELS 1), cqels (CQELS 1) or cqels2 "
        f"(CQELS-QL 2.0); default: {default}", choices=DIALECTS,
    )


def switch(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """A boolean flag; its environment twin accepts 1/true/yes/on and 0/false/no/off."""
    env = _env_name(flag)
    raw = os.environ.get(env, "").strip().lower()
    if raw not in _TRUE | _FALSE:
        parser.error(f"{env}={raw!r} is not a boolean; use 1/true/yes/on or 0/false/no/off")
    parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=raw in _TRUE, help=f"{help} [env {env}]")


def read_source(source: str) -> str | None:
    """The text of ``source`` (``-`` is standard input), or None after reporting why it cannot be read."""
    if source == "-":
        return sys.stdin.read()
    try:
        with open(source, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as error:
        print(f"cqels: cannot read {source}: {error}", file=sys.stderr)
        return None


def client_options(parser: argparse.ArgumentParser, *, writes: bool = True) -> None:
    """``--url`` of the server, and ``--auth-token`` for a command that writes."""
    from cqels_endpoint.cli.client import DEFAULT_URL

    option(parser, "--url", "the server's base URL", default=DEFAULT_URL, metavar="URL")
    if writes:
        option(parser, "--auth-token", "the bearer token the server requires for writes", metavar="TOKEN")
    else:
        parser.set_defaults(auth_token=None)


def client(args: argparse.Namespace):
    """The HTTP client of a command given ``client_options``."""
    from cqels_endpoint.cli.client import Client

    return Client(args.url, args.auth_token)
