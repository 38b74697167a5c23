"""The lineage tags of OPTIONAL's output rows (``OptionalJoin``, compiled and twin).

A joined row's lineage is ``(JOINED, *left, *right)``, a left row without match ``(PADDED, *left)``:
the leading tag keeps the two kinds apart although their lengths differ.
"""

PADDED = 0
JOINED = 1
