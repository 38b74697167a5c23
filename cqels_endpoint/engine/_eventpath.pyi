from collections.abc import Callable

class EventPath:
    valid: bool
    def __init__(
        self,
        engine: object,
        stream: str,
        fanout: object,
        index: object,
        unit: object,
        query: object,
        *,
        wall_clock: Callable[[], int],
        triple_types: tuple[type, ...],
        forms: type | None,
        event_triples: Callable[[object], object],
    ) -> None: ...
    def take(self, triples: object, time: object) -> object | None: ...
