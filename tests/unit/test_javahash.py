"""Java `String.hashCode` / `compareTo` semantics; expected values were checked against a real JVM."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrator.assign.javahash import java_string_hashcode, java_string_sort_key


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("", 0),
        ("a", 97),
        # '[' 91, 't' 116, ',' 44, '0' 48, ']' 93:
        # 91 -> 91*31+116=2937 -> 2937*31+44=91091 -> 91091*31+48=2823869 -> 2823869*31+93=87540032
        ("[t,0]", 87540032),
        # 2805611*31+48=86973989; 86973989*31+93=2696193752 > 2^31-1, wraps to 2696193752-2^32
        ("[a,10]", 2696193752 - 2**32),
        ("polygenelubricants", -(2**31)),  # the well-known string hashing to Integer.MIN_VALUE
        ("Aa", 2112),
        ("BB", 2112),
        # U+1F600 is the surrogate pair D83D DE00 in Java: 0xD83D*31 + 0xDE00
        ("\U0001f600", 0xD83D * 31 + 0xDE00),
        ("\ud800", 0xD800),  # a lone surrogate is a legal Java char
    ],
)
def test_worked_examples(s: str, expected: int) -> None:
    assert java_string_hashcode(s) == expected


def _signed32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 2**32 if x >= 2**31 else x


def _utf16_len(s: str) -> int:
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)


@given(st.text(), st.text())
def test_hash_is_polynomial_over_utf16_units(a: str, b: str) -> None:
    # hash(a+b) = hash(a) * 31^len16(b) + hash(b) (mod 2^32): pins both the base and the unit count.
    expected = _signed32(java_string_hashcode(a) * pow(31, _utf16_len(b), 2**32) + java_string_hashcode(b))
    assert java_string_hashcode(a + b) == expected


@given(st.text())
def test_hash_is_a_signed_32_bit_int(s: str) -> None:
    assert -(2**31) <= java_string_hashcode(s) < 2**31


@given(st.text(alphabet=st.characters(max_codepoint=0xD7FF)), st.text(alphabet=st.characters(max_codepoint=0xD7FF)))
def test_sort_key_agrees_with_python_below_the_surrogates(a: str, b: str) -> None:
    assert (java_string_sort_key(a) < java_string_sort_key(b)) == (a < b)


def test_sort_key_orders_by_utf16_units_not_code_points() -> None:
    # Java: U+1F600 starts with unit D83D, below U+E000 and U+FFFF; Python orders by code point.
    java_order = ["b", "c-1", "c-10", "c-2", "\U0001f600", "\ue000", "\uffff"]
    assert sorted(reversed(java_order), key=java_string_sort_key) == java_order
    assert sorted(java_order) != java_order
