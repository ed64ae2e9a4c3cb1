"""What an error librdkafka reports for the embedded member means for its place in the Kafka group: a
`GroupFault` decided from the error's code (never from its message text), once, for the member to act on; and
whether the member may hand librdkafka a commit now (`commit_bar`)."""

from __future__ import annotations

from enum import Enum

from confluent_kafka import KafkaError

__all__ = ["CommitBar", "GroupFault", "commit_bar", "group_fault_of"]


class GroupFault(Enum):
    """What the member does about a reported error."""

    PASSING = "passing"
    """A reconnect failure and the like: librdkafka retries by itself; logged, nothing else."""
    NO_BROKER = "no broker"
    """No broker reachable: an assigned member keeps its generation until its session times out."""
    UNAVAILABLE = "unavailable"
    """The group does not take the member (GROUP_MAX_SIZE_REACHED, a fatal error): coordination is lost."""
    DISAGREEMENT = "disagreement"
    """The broker refused the JoinGroup: no member offers one of our assignors."""
    FENCED = "fenced"
    """Another consumer joined with our group.instance.id: librdkafka has stopped the client for good."""


def group_fault_of(code: int, *, static: bool) -> GroupFault:
    """The fault of error `code` for a member that is static (has a group.instance.id) or not. librdkafka
    reports a fenced static member as `_FATAL`, whose original code (FENCED_INSTANCE_ID) the error callback
    does not carry; under the classic group protocol a fenced instance is the only fatal error of a consumer."""
    if code == KafkaError.FENCED_INSTANCE_ID or (code == KafkaError._FATAL and static):
        return GroupFault.FENCED
    if code == KafkaError.INCONSISTENT_GROUP_PROTOCOL:
        return GroupFault.DISAGREEMENT
    if code == KafkaError._ALL_BROKERS_DOWN:
        return GroupFault.NO_BROKER
    if code in (KafkaError.GROUP_MAX_SIZE_REACHED, KafkaError._FATAL):
        return GroupFault.UNAVAILABLE
    return GroupFault.PASSING


class CommitBar(Enum):
    """Why the embedded member must not hand a commit to librdkafka now."""

    NO_GENERATION = "no generation (assignment lost, member id reset, or fenced)"
    """Kafka would refuse it; a static member's would carry the reset member id, answered FENCED_INSTANCE_ID."""
    NO_COORDINATOR = "the group coordinator is not reachable now"
    """librdkafka holds a commit while the coordinator is not up, for session.timeout.ms, and sends it the moment
    the coordinator is back. The session, timed from the last heartbeat before the commit, ends first, and the
    member id with it: a static member's held commit is then answered FENCED_INSTANCE_ID, fatal to the client."""


def commit_bar(*, generation: bool, static: bool, coordinator_up: bool) -> CommitBar | None:
    """Why a member that has (or lacks) a `generation`, is `static` or not and sees its coordinator up or not
    must not commit now; None when it may. A dynamic member's held commit is refused harmlessly, so only a
    static member waits for its coordinator."""
    if static and not coordinator_up:
        return CommitBar.NO_COORDINATOR
    if not generation:
        return CommitBar.NO_GENERATION
    return None
