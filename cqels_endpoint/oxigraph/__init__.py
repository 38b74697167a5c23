"""The project's query AST on pyoxigraph and on the static store (``static_store``).

``terms`` turns AST terms into pyoxigraph terms and back; ``checks`` finds on the AST what
pyoxigraph cannot run or policy forbids, and locates pyoxigraph's refusals; ``update`` carries out a
SPARQL Update request operation by operation with exact deltas; ``requests.CqelsRequests`` is the
request engine built of these that the endpoint's ``StaticStore`` is given (``requests.open_store``).
"""
