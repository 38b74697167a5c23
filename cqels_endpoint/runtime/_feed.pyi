from collections.abc import Callable, Iterator, Sequence

from cqels_endpoint.runtime.routing import Router
from cqels_endpoint.runtime.windows import WindowState

class EventFeed:
    def __init__(
        self,
        states: Sequence[WindowState],
        on_insert: Callable[[int, tuple[int, ...], int, int], None],
        on_expire: Callable[[int, int], None],
    ) -> None: ...
    def offer(self, router: Router, ids: Sequence[int], t: int, tau: int, seqs: Iterator[int]) -> None: ...
    def expire(self, tau: int) -> None: ...
