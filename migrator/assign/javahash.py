"""Java `String` semantics the legacy assignors depend on.

The Scala and Java assignors hash and sort strings as sequences of UTF-16 code units. Python works on code
points, which agrees for ASCII but not beyond: a non-BMP character is one Python character and two Java
`char`s, and it sorts *below* U+E000..U+FFFF in Java but above them in Python. Every member of a mixed
group must compute the same assignment, so we reproduce Java exactly.
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF


def _utf16_units(s: str) -> bytes:
    # surrogatepass: a lone surrogate is a valid Java char, so it must hash and sort like one.
    return s.encode("utf-16-be", "surrogatepass")


def java_string_hashcode(s: str) -> int:
    """Java's `String.hashCode()`: `s[0]*31^(n-1) + … + s[n-1]` over UTF-16 units, as a signed 32-bit int."""
    units = _utf16_units(s)
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + (units[i] << 8 | units[i + 1])) & _MASK
    return h - (1 << 32) if h & 0x80000000 else h


def java_string_sort_key(s: str) -> bytes:
    """A sort key giving Java's `String.compareTo` order (UTF-16 code units, shorter prefix first).

    Big-endian UTF-16 bytes compare lexicographically exactly as their 16-bit units do.
    """
    return _utf16_units(s)
