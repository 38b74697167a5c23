"""The SPARQL 1.1 + CQELS grammar files, installed as ``cqels_endpoint.grammar``."""
