"""cqels-endpoint: a SPARQL 1.1 endpoint with continuous CQELS queries over RDF streams."""
