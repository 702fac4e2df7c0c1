"""Reading a format-2 transcript's signed channel back, as a verifier does (PROTOCOL.md 14.11)."""

from __future__ import annotations

from pathlib import Path

from basra_net.protocol import transcript
from basra_net.protocol.record import ChannelContext, ChannelRecord, Status, check_channel


def channel_of(path: Path, *, partial: bool = False) -> ChannelRecord:
    """The channel a format-2 transcript records, checked from its bodies; RecordError names what does not hold.

    With ``partial``, a record cut short (before the host signed the result) is taken as far as it goes."""
    parsed = transcript.parse(path.read_bytes())
    assert parsed.format == transcript.SIGNED_FORMAT
    hello, welcome = parsed.records[0][1], parsed.records[1][1]
    context = ChannelContext(welcome.match_id, welcome.host_key, hello.key, welcome.seat, hello.nonce, welcome.scoring, welcome.target)
    return check_channel(context, parsed.bodies, partial=partial)


def signed_by_both(channel: ChannelRecord) -> bool:
    """Every game and the result carry valid signatures of both players."""
    signed = [*channel.games, channel.result]
    return channel.result is not None and all((s.host, s.guest) == (Status.VALID, Status.VALID) for s in signed)
