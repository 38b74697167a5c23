# The layout of inline term ids (runtime/encoding.py documents it), included by the compiled
# modules that build or read them (_encoding.pyx, _dictionary.pyx).
DEF TYPE_SHIFT = 58
DEF TZ_BITS = 11
DEF TZ_MASK = 0x7FF  # (1 << TZ_BITS) - 1
DEF TZ_NONE = 0
DEF TZ_UTC = 1
DEF TZ_OFFSET = 2
DEF MAX_OFFSET_MINUTES = 840
# Type bits, as encoding.InlineType numbers them.
DEF INLINE_INTEGER = 0
DEF INLINE_DECIMAL = 1
DEF INLINE_BOOLEAN = 2
DEF INLINE_DATETIME = 3
