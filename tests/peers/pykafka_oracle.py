"""pykafka 2.8.0's assignors as an oracle; runs in the pykafka peer venv (tests/helpers/pykafka_peer.py).

Reads one JSON request per line: {"protocol", "topic", "python2_names", "participants", "leaders"
(partition -> leader broker id)}, and answers one JSON line: partition -> consumer id, from calling the
library's own `decide_partitions` once per participant, with partitions shaped like pykafka's (`.id`,
`.leader.id`, `.topic.name`: bytes as on Python 3, or str as Python 2's `str` would print).
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

from pykafka.membershipprotocol import RangeProtocol, RoundRobinProtocol

PROTOCOLS = {"range": RangeProtocol, "roundrobin": RoundRobinProtocol}


class Partition:
    """Hashable by identity, like `pykafka.partition.Partition` (the assignors return a set of them)."""

    def __init__(self, partition_id: int, leader: int, topic: SimpleNamespace) -> None:
        self.id = partition_id
        self.leader = SimpleNamespace(id=leader)
        self.topic = topic


def answer(request: dict) -> dict:
    name = request["topic"] if request["python2_names"] else request["topic"].encode()
    topic = SimpleNamespace(name=name)
    partitions = {int(p): Partition(int(p), leader, topic) for p, leader in request["leaders"].items()}
    participants = sorted(cid.encode() for cid in request["participants"])
    decide = PROTOCOLS[request["protocol"]].decide_partitions
    owners = {}
    for cid in participants:
        for p in decide(participants, partitions, cid):
            owners[p.id] = cid.decode()
    return owners


def main() -> int:
    for line in sys.stdin:
        sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
