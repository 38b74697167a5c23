"""The hash functions of §17.4.6: MD5, SHA1, SHA256, SHA384, SHA512 of a simple literal or
xsd:string, as lowercase hexadecimal."""

from __future__ import annotations

import hashlib

from pyoxigraph import Literal

from cqels_endpoint.runtime.functions.values import Builtin, simple_value


def _hash(algorithm: str):
    def digest(term) -> Literal:
        return Literal(hashlib.new(algorithm, simple_value(term).encode("utf-8")).hexdigest())

    digest.__name__ = f"fn_{algorithm}"
    return digest


fn_md5 = _hash("md5")
fn_sha1 = _hash("sha1")
fn_sha256 = _hash("sha256")
fn_sha384 = _hash("sha384")
fn_sha512 = _hash("sha512")


BUILTINS = {
    "MD5": Builtin(fn_md5, 1, 1),
    "SHA1": Builtin(fn_sha1, 1, 1),
    "SHA256": Builtin(fn_sha256, 1, 1),
    "SHA384": Builtin(fn_sha384, 1, 1),
    "SHA512": Builtin(fn_sha512, 1, 1),
}
