"""Known failures of the W3C SPARQL suites: test IRI → the reason. Add entries, do not rewrite."""

KNOWN_FAILURES: dict[str, str] = {}
