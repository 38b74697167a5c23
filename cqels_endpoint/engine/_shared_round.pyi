from collections.abc import Callable

class Member:
    query: object
    def __init__(self, query: object, first: object, errors: dict, decode_all: Callable[[list[tuple]], list]) -> None: ...
    def evaluate(self, tau: int) -> None: ...

def run_round(
    members: list[Member], when: int, received: float | None, fail: Callable[[object, Exception], None], started: float
) -> None: ...
