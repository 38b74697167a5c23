"""The HTTP endpoint: a Flask app (``create_app``) behind the ASGI app (``asgi.application``), served
by uvicorn (``server.py``)."""

from cqels_endpoint.http.app import create_app

__all__ = ["create_app"]
