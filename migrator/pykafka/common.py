"""pykafka's `OffsetType`, under the name an application imports it by (`from pykafka.common import OffsetType`)."""

from __future__ import annotations


class OffsetType:
    """The logical offsets pykafka's `auto_offset_reset` takes (the same numbers pykafka uses)."""

    EARLIEST = -2
    LATEST = -1
