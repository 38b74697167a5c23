"""The HTTP endpoint: a Flask app (``create_app``) served by waitress (``server.py``)."""

from cqels_endpoint.http.app import create_app

__all__ = ["create_app"]
