"""Byte-exact znode codecs and topic-filter normalisation (CONTRACT §1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from migrator.errors import ConfigError, CorruptNodeError
from migrator.protocol.codecs import (
    Authority,
    Mode,
    PublishedAuthority,
    Registration,
    authority_of,
    decode_offset,
    encode_offset,
    follows_mode,
)
from migrator.protocol.filters import Blacklist, Whitelist, normalise_regex


def test_registration_is_byte_for_byte_the_scala_json() -> None:
    reg = Registration({"orders": 2}, "static", 1491234567890)
    assert reg.encode() == b'{"version":1,"subscription":{"orders":2},"pattern":"static","timestamp":"1491234567890"}'


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.integers(1, 64), min_size=1), st.integers(0, 2**41))
def test_registration_round_trips(subscription, ts) -> None:
    reg = Registration(subscription, "static", ts)
    assert Registration.decode(reg.encode()) == reg


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{not json",
        b"[]",
        b'{"version":2,"subscription":{"t":1},"pattern":"static"}',
        b'{"version":1,"subscription":{},"pattern":"static"}',
        b'{"version":1,"subscription":{"t":0},"pattern":"static"}',
        b'{"version":1,"subscription":{"t":1},"pattern":"other"}',
        b'{"version":1,"subscription":{"a":1,"b":1},"pattern":"white_list"}',
        b'{"version":1,"subscription":{"t":true},"pattern":"static"}',
    ],
)
def test_malformed_registrations_are_refused(data) -> None:
    with pytest.raises(CorruptNodeError):
        Registration.decode(data)


def test_offsets_are_plain_decimals() -> None:
    assert encode_offset(42) == b"42"
    assert decode_offset(b"42") == 42
    for bad in (b"", b"-1", b"4.2", b"x"):
        with pytest.raises(CorruptNodeError):
            decode_offset(bad)


def test_published_authority_round_trips() -> None:
    from migrator.protocol.codecs import Authority

    pa = PublishedAuthority(Authority.KAFKA, 3, 1700000000000, "why", "m-1", 4)
    assert PublishedAuthority.decode(pa.encode()) == pa
    held = PublishedAuthority(Authority.ZOOKEEPER, 4, 1700000000001, "holding nothing …", "m-1", 0, held=True)
    assert PublishedAuthority.decode(held.encode()) == held
    # a node written before `held` existed decodes as not held
    old = b'{"version":1,"authority":"zookeeper","generation":1,"timestamp":1,"reason":"","partitions":0}'
    assert PublishedAuthority.decode(old).held is False


def test_published_rebalance_protocol_round_trips_and_an_unknown_one_reads_as_unknown() -> None:
    from migrator.protocol.codecs import Authority
    from migrator.protocol.kafka import RebalanceProtocol

    for protocol in RebalanceProtocol:
        pa = PublishedAuthority(Authority.KAFKA, 3, 1, protocol=protocol)
        assert PublishedAuthority.decode(pa.encode()) == pa
    later = b'{"version":1,"authority":"kafka","generation":1,"timestamp":1,"protocol":"consumer"}'
    assert PublishedAuthority.decode(later).protocol is None


def test_filter_normalisation_matches_the_scala_topic_filter() -> None:
    assert normalise_regex(' "a.*, b" ') == "a.*|b"
    w = Whitelist("a.*, b")
    assert (w.regex, w.pattern) == ("a.*|b", "white_list")
    assert w.is_allowed("abc") and w.is_allowed("b") and not w.is_allowed("c")
    assert not w.is_allowed("__consumer_offsets") or not w.matches("__consumer_offsets")
    b = Blacklist("x.*")
    assert b.pattern == "black_list" and b.is_allowed("y") and not b.is_allowed("xy")
    assert not Whitelist(".*").is_allowed("__consumer_offsets")
    assert Whitelist(".*").is_allowed("__consumer_offsets", exclude_internal=False)
    with pytest.raises(ConfigError):
        Whitelist("(")


def test_every_mode_has_the_authority_of_the_same_name() -> None:
    assert {mode.value: authority_of(mode).value for mode in Mode} == {mode.value: mode.value for mode in Mode}


@given(st.sampled_from(Authority), st.sampled_from(Mode))
def test_a_bridge_follows_the_mode_exactly_when_it_holds_that_modes_authority(authority: Authority, mode: Mode) -> None:
    assert follows_mode(authority, mode) == (authority is authority_of(mode))
    assert follows_mode(authority, mode) == (authority.value == mode.value)
