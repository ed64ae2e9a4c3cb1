"""set-mode --wait: what a timeout says about each bridge still missing."""

from __future__ import annotations

from migrator.ops.wait import progress
from migrator.protocol.codecs import Authority, Mode, PublishedAuthority

WRITE = 100


def published(authority: Authority, reason: str = "") -> PublishedAuthority:
    return PublishedAuthority(authority=authority, generation=2, timestamp_ms=1, reason=reason)


def test_a_bridge_that_published_another_authority_after_the_write_is_named_with_its_reason() -> None:
    why = "legacy connector(s) registered: g_old"
    state = progress(
        Mode.KAFKA,
        ["g_a", "g_b", "g_c"],
        {"g_a": (published(Authority.KAFKA), WRITE + 1), "g_b": (published(Authority.ZOOKEEPER, why), WRITE + 2)},
        WRITE,
        None,
        set(),
    )
    assert state.pending_bridges == ("g_b", "g_c")
    text = state.describe()
    assert f"bridge g_b published zookeeper after the write: {why}" in text
    assert "bridges not yet publishing the new authority: g_c" in text


def test_a_publication_older_than_the_write_is_only_pending() -> None:
    stale = {"g_a": (published(Authority.ZOOKEEPER, "mode is absent"), WRITE - 1)}
    state = progress(Mode.KAFKA, ["g_a"], stale, WRITE, None, set())
    assert state.refusing == ()
    assert state.describe() == "bridges not yet publishing the new authority: g_a"
