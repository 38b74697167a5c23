from collections.abc import Sequence

from cqels_endpoint.runtime.routing import PatternSpec

class Router:
    def __init__(self, specs: Sequence[PatternSpec]) -> None: ...
    def route(self, ids: Sequence[int]) -> list[tuple[int, tuple[int, int, int], int]]: ...
