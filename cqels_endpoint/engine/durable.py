"""Files a crash never leaves half written: the stored queries, the stream clocks, the connectors."""

from __future__ import annotations

import os
from pathlib import Path


def write_durably(path: Path, text: str, *, backup: bool = True) -> None:
    """Replaces ``path`` by ``text`` so that a crash, even of the machine, leaves the old or the new
    file, never half of one (a temporary file, synced, renamed over it, the directory synced); with
    ``backup`` the file replaced is kept as ``<name>.bak`` (a hard link: no copy)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    if backup and path.exists():  # the file replaced becomes the backup, renamed into place whole
        linked = path.with_name(path.name + ".bak.tmp")
        linked.unlink(missing_ok=True)
        os.link(path, linked)
        os.replace(linked, path.with_name(path.name + ".bak"))
    os.replace(temporary, path)
    # The rename itself is durable only once the directory is synced.
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
