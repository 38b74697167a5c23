"""Stopping a one-shot query at its deadline: in-process between output chunks, or in a forked child.

pyoxigraph (0.5) cannot cancel a running query (oxigraph issue #1926) and a thread cannot be killed,
but its solutions stream lazily and it releases the GIL while it evaluates. So a query whose rows
come as it goes is evaluated in the request's own thread and serialised into a ``DeadlineWriter``:
pyoxigraph hands it 8 KiB at a time, and past the deadline the writer raises, which ends the
evaluation. Nothing is forked, nothing waits for anything else: 0.15 ms for a point lookup on a
1M-triple on-disk store.

A query that may compute long before its first row (aggregates, ORDER BY, closures of property
paths: ``shape.QueryShape.blocking``) would write nothing to check, so it runs in a child process:
``os.fork`` gives it the store's memory (copy-on-write) and open database for free, it evaluates and
writes the serialised result into a pipe, and the parent reads with a deadline; past it the child
gets ``SIGKILL`` and is reaped before ``QueryTimeoutError`` is raised, so nothing keeps running. A
child that answered closes its pipe before it exits and is reaped in the background: the exit of a
large process costs as much as its fork.

The fork takes no lock: writers never wait for it and it never waits for them. The child's copy
holds whole pyoxigraph transactions only; like an in-process query it may see an Update request the
store runs operation by operation between two of its operations (``store``). Only the forking
thread exists in the child, though: if another thread (one of RocksDB's background threads, say)
held a lock at that instant, the child blocks on it forever. Such a child is recognisable for
certain: it has a single thread and sleeps in a futex wait, which nothing can ever end. The parent
watches for that (Linux ``/proc``), kills the child and forks again, within the same deadline. A
child whose parent died ends itself (``SIGALRM``) a second past the deadline.

Fork cost, measured on the development machine (2 cores) for ``ASK { ?s ?p ?o }``: 3.8 ms with a
55 MiB process, 10 ms at 408 MiB, as fork copies the page tables: the store keeps the server small
(no quads held in Python).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import platform
import selectors
import signal
import threading
import time
import warnings
from collections.abc import Callable

from static_store.errors import QueryTimeoutError

log = logging.getLogger(__name__)


class EvaluationFailed(Exception):
    """The child's evaluation raised: the exception's class name and message, for the caller to map."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


_OK = b"0"
_DEADLOCKED = object()  # marks an attempt whose child was found deadlocked (and killed)
_FAILED = b"1"
_CHUNK = 1 << 20
_POLL = 0.05  # seconds between deadlock checks while waiting for the child
# The futex system call number, for kernels that hide /proc/<pid>/wchan.
_FUTEX_SYSCALL = {"x86_64": "202", "aarch64": "98", "arm64": "98"}.get(platform.machine())


class DeadlineWriter(io.RawIOBase):
    """A binary sink for pyoxigraph's serialisers that raises ``QueryTimeoutError`` past ``deadline``
    (``time.monotonic()`` seconds); ``getvalue()`` is everything written. (A raw I/O object:
    pyoxigraph writes into one faster than into a plain object with a ``write`` method.)"""

    def __init__(self, deadline: float, message: str):
        super().__init__()
        self._deadline = deadline
        self._message = message
        self._chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, chunk) -> int:
        if time.monotonic() > self._deadline:
            raise QueryTimeoutError(self._message)
        self._chunks.append(bytes(chunk))
        return len(chunk)

    def getvalue(self) -> bytes:
        return b"".join(self._chunks)


def timeout_message(timeout: float, describe: str = "query") -> str:
    return f"the {describe} ran longer than {timeout:g} s and was stopped; simplify it or raise the timeout"


def evaluate_in_child(evaluate: Callable[[], bytes], timeout: float, describe: str = "query") -> bytes:
    """Run ``evaluate`` in a forked child; its bytes, or ``QueryTimeoutError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        data = _attempt(evaluate, deadline)
        if data is _DEADLOCKED:
            # A lock inherited mid-use: fork again, the other thread has moved on by now.
            log.info("the %s's child process deadlocked on a lock held at fork time; forking again", describe)
            continue
        if data is None:
            raise QueryTimeoutError(timeout_message(timeout, describe))
        return _decode(data)


def _attempt(evaluate: Callable[[], bytes], deadline: float):
    """One child: its output, None past the deadline, or ``_DEADLOCKED`` (the child is gone in both cases)."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        # Python ≥ 3.12 warns about fork in a threaded process; the deadlock it warns of is handled here.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        _child(evaluate, read_fd, write_fd, deadline)  # never returns
    os.close(write_fd)
    try:
        outcome = _read_until(read_fd, deadline, pid)
    except BaseException:
        _kill(pid)
        raise
    finally:
        os.close(read_fd)
    if outcome is None or outcome is _DEADLOCKED:
        _kill(pid)
    else:
        # Tearing down a large child's address space takes as long as forking it: reaped meanwhile.
        threading.Thread(target=os.waitpid, args=(pid, 0), name=f"reap-{pid}", daemon=True).start()
    return outcome


def _child(evaluate: Callable[[], bytes], read_fd: int, write_fd: int, deadline: float) -> None:
    """The child's whole life: evaluate, write status + payload, exit without running any cleanup."""
    code = 0
    try:
        os.close(read_fd)
        # Self-destruct a second after the deadline, in case the parent died and cannot kill us:
        # SIGALRM's default action ends the process even inside pyoxigraph's Rust code.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(max(1, math.ceil(deadline - time.monotonic())) + 1)
        try:
            message = _OK + evaluate()
        except Exception as error:  # reported to the parent, which raises it there
            text = error.msg if isinstance(error, SyntaxError) else str(error)
            message = _FAILED + json.dumps({"type": type(error).__name__, "message": text}).encode()
        view = memoryview(message)
        while view:
            written = os.write(write_fd, view)
            view = view[written:]
        os.close(write_fd)  # EOF now: the parent need not wait for this process's exit
    except BaseException:
        code = 1
    finally:
        # ``_exit``: no atexit handlers, no flushing of buffers inherited from the parent.
        os._exit(code)


def _read_until(fd: int, deadline: float, pid: int):
    """Everything written to ``fd`` until EOF; None if the deadline passes first; ``_DEADLOCKED``."""
    chunks = []
    stuck_polls = 0
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not selector.select(min(remaining, _POLL)):
                # Two polls in a row: a deadlock is permanent, a glimpse of something else is not.
                stuck_polls = stuck_polls + 1 if _deadlocked(pid) else 0
                if stuck_polls >= 2:
                    return _DEADLOCKED
                continue
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def _deadlocked(pid: int) -> bool:
    """Whether the child is single-threaded and waiting on a futex: no thread is left to wake it."""
    proc = f"/proc/{pid}"
    try:
        if len(os.listdir(f"{proc}/task")) != 1:
            return False
        with open(f"{proc}/wchan") as f:
            wchan = f.read()
        if wchan not in ("", "0"):
            return "futex" in wchan
        with open(f"{proc}/syscall") as f:
            return _FUTEX_SYSCALL is not None and f.read().split(" ", 1)[0] == _FUTEX_SYSCALL
    except OSError:
        return False  # no /proc (not Linux) or the child just exited: only the deadline applies


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)  # reap it: no zombie left behind


def _decode(data: bytes) -> bytes:
    if data[:1] == _OK:
        return data[1:]
    if data[:1] == _FAILED:
        failure = json.loads(data[1:])
        raise EvaluationFailed(failure["type"], failure["message"])
    raise EvaluationFailed("ChildProcessError", "the evaluating process died without an answer")
