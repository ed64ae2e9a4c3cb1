"""Which librdkafka clients are stranded (neither connected to a broker nor trying to), from their statistics."""

from __future__ import annotations

import json

from migrator.kafka.stranding import STRANDED_S, Reach, Stranding, StrandingWatch, reach_of


def _statistics(*brokers: tuple[str, str, int]) -> str:
    described = {f"b{i}": {"name": f"b{i}", "source": src, "state": st, "connects": n}
                 for i, (src, st, n) in enumerate(brokers)}  # fmt: skip
    return json.dumps({"brokers": described})


def test_reach_counts_only_bootstrap_and_learned_brokers() -> None:
    reach = reach_of(_statistics(("learned", "INIT", 3), ("logical", "UP", 1), ("internal", "UP", 0)))
    assert reach == Reach(False, (("b0", "INIT", 3),))  # a group coordinator handle connects nothing to fetch
    assert reach_of(_statistics(("configured", "TRY_CONNECT", 0), ("learned", "UP", 1))) == Reach(
        True, (("b0", "TRY_CONNECT", 0), ("b1", "UP", 1))
    )
    assert reach_of(_statistics(("learned", "UP", 1))) == Reach(True, (("b0", "UP", 1),))
    assert reach_of(_statistics()) == Reach(False, ())
    assert reach_of("{not json") is None
    assert reach_of(json.dumps({"name": "rdkafka#consumer-1"})) is None


def test_a_client_is_stranded_only_when_neither_connected_nor_trying_for_the_whole_grace() -> None:
    dropped = Reach(False, (("b1", "INIT", 4),))  # a dropped broker left in INIT: never tried again
    s = Stranding().observe(dropped, now=100.0)
    s = s.observe(dropped, now=110.0)
    assert s.since == 100.0 and not s.stranded(now=110.0, grace_s=20.0)
    assert s.observe(None, now=120.0).stranded(now=120.0, grace_s=20.0)  # no statistics is no change
    assert Stranding().observe(Reach(False, ()), now=0.0).stranded(now=20.0, grace_s=20.0)  # no broker at all


def test_an_unreachable_broker_that_is_retried_or_a_connected_one_restarts_the_clock() -> None:
    s = Stranding().observe(Reach(False, (("boot", "TRY_CONNECT", 1),)), now=100.0)
    s = s.observe(Reach(False, (("boot", "INIT", 2),)), now=115.0)  # another attempt since
    assert s.since == 115.0 and not s.stranded(now=130.0, grace_s=20.0)
    s = s.observe(Reach(True, (("b1", "UP", 1),)), now=131.0)
    assert s.since is None and not s.stranded(now=1e9)
    assert STRANDED_S >= 10.0


def test_a_watch_ignores_a_replaced_clients_statistics_and_waits_while_no_bootstrap_server_answers() -> None:
    watch = StrandingWatch("127.0.0.1:1")  # nothing listens there
    first = watch.new_client()
    watch.observe(first, reach_of(_statistics()))
    second = watch.new_client()
    watch.observe(first, reach_of(_statistics()))  # late, from the replaced client
    assert watch.is_current(second) and not watch.is_current(first)
    assert watch.stranded_for() == 0.0
    watch.observe(second, reach_of(_statistics()))
    watch._stranding = Stranding(since=watch._stranding.since - STRANDED_S, attempts=())  # the grace has passed
    assert not watch.replace_due()  # every broker is down: no new client, and the clock starts again
    assert watch.stranded_for() == 0.0
