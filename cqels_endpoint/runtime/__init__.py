"""Run-time support of the continuous engine: term encoding, streams, windows, expressions."""
