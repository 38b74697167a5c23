"""What a compiled operator (``operators/_*.pyx``) and its pure-Python twin (``operators/reference/``)
share: output schemas, lineage tags and the base classes that hold each pair's common contract.

Both sides import these from here, never one from the other, so each definition exists once.
"""
