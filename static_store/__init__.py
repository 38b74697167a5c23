"""The static store: every access to pyoxigraph (named graphs, change events, bulk load)."""
