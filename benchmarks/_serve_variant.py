"""One server of ``http_servers.py``: this endpoint's app over an on-disk store, served by ``VARIANT``.

    python benchmarks/_serve_variant.py VARIANT DATA_DIR PORT

Variants: ``uvicorn`` (what ``cqels serve`` runs: httptools, uvloop, ``http/server.py``),
``uvicorn-h11`` (uvicorn's pure-Python parser on asyncio), ``hypercorn`` (h11 on asyncio),
``granian`` (Rust, hyper; ASGI, one worker process) and ``waitress`` (the server before: the Flask
app alone, as WSGI, every route in Flask). The app is built as ``cqels serve`` builds it, with the
local cache engine; SIGTERM stops it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.http.app import create_app
from cqels_endpoint.http.asgi import application
from cqels_endpoint.oxigraph.requests import open_store

VARIANTS = ("uvicorn", "uvicorn-h11", "hypercorn", "granian", "waitress")


def build():
    """The ASGI app over ``CQELS_BENCH_DATA_DIR`` (Granian's worker imports and calls this)."""
    config = ServerConfig(data_dir=Path(os.environ["CQELS_BENCH_DATA_DIR"]), cache_engine="local", query_timeout=30)
    store = open_store(config.store_path)
    return create_app(store, config)


def main(variant: str, data_dir: str, port: int) -> None:
    os.environ["CQELS_BENCH_DATA_DIR"] = data_dir
    if variant == "granian":
        from granian import Granian
        from granian.constants import Interfaces

        Granian(f"{Path(__file__).stem}:build_asgi", address="127.0.0.1", port=port, interface=Interfaces.ASGI,
                workers=1, factory=True).serve()
        return
    app = build()
    if variant == "uvicorn":
        from cqels_endpoint.http.server import serve

        serve(application(app), "127.0.0.1", port)
    elif variant == "uvicorn-h11":
        import uvicorn

        uvicorn.run(application(app), host="127.0.0.1", port=port, http="h11", loop="asyncio", log_level="warning",
                    lifespan="off")
    elif variant == "hypercorn":
        from hypercorn.asyncio import serve as hypercorn_serve
        from hypercorn.config import Config

        config = Config()
        config.bind = [f"127.0.0.1:{port}"]
        config.loglevel = "WARNING"
        stop = asyncio.Event()

        async def run() -> None:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await hypercorn_serve(application(app), config, shutdown_trigger=stop.wait)

        asyncio.run(run())
    elif variant == "waitress":
        from waitress import serve as waitress_serve

        waitress_serve(app, host="127.0.0.1", port=port, threads=8, _quiet=True)
    else:
        raise SystemExit(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")


def build_asgi():
    return application(build())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
