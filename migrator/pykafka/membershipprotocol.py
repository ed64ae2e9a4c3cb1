"""pykafka's two membership protocols, as values `membership_protocol=` accepts.

pykafka's own `RangeProtocol` / `RoundRobinProtocol` objects are accepted as well (they are recognised by their
`protocol_name`), so an application may keep importing them from pykafka where pykafka is installed.
"""

from __future__ import annotations

from typing import NamedTuple


class GroupMembershipProtocol(NamedTuple):
    """The fields of pykafka's namedtuple that migrator reads; the assignment itself is migrator's own
    (`migrator.assign.pykafka`), which computes what pykafka's `decide_partitions` does."""

    protocol_type: bytes
    protocol_name: bytes


RangeProtocol = GroupMembershipProtocol(b"consumer", b"range")
RoundRobinProtocol = GroupMembershipProtocol(b"consumer", b"roundrobin")
