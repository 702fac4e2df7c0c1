"""A match's journal read back: the seats it had and the inputs it took, in order.

With a journal, every input the match depends on (the seats, each host seed,
each seed, play and countersignature taken) is on disk before its effects are sent.  A host
restarted from the journal builds the same table and runs the same match code;
where that code would wait for an input (``JournalReplay.next``), the journal
hands it back instead, until it is used up and the table goes on live.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from ..protocol.messages import Hello, Play, Seed, Sig, from_wire
from .seats import Seat

HOST_SEED = -1  # the sender of a host seed record


class Journal(Protocol):
    def append(self, record: dict) -> None: ...


class JournalMismatch(Exception):
    """A journal's records do not fit the match they claim to continue."""


class JournalReplay:
    """The inputs of a journal not yet taken again; while any are left, nothing is written back."""

    def __init__(self, journal: Journal | None) -> None:
        self.journal = journal
        # The inputs read back, set only for a table from a journal (an empty deque takes about 760 bytes).
        self.pending: deque[tuple[int, Any]] | None = None
        self.live = True  # False while a journal is replayed: its records are not written again

    def replay(self, inputs: deque[tuple[int, Any]]) -> None:
        """Hand back these inputs, in order, before the table goes on live; nothing is written back meanwhile."""
        self.pending = inputs
        self.live = False

    def write(self, record: dict) -> None:
        if self.journal is not None and self.live:
            self.journal.append(record)

    def next(self) -> tuple[int, Any] | None:
        """The next input of the journal; None once it is used up, and the table is live."""
        pending = self.pending
        self.live = not pending
        return pending.popleft() if pending else None


def read_records(records: list[dict]) -> tuple[list[tuple[int, Seat]], deque[tuple[int, Any]]]:
    """The seats a journal's records took (seat number and seat, in their order) and the inputs the match took.

    Raises JournalMismatch for a journal with no match to resume; KeyError or
    TypeError for a record that lacks a field or has one of the wrong type.
    """
    taken: dict[int, dict] = {}  # the seats held when the match started: a seat given up before is free again
    for record in records:
        if record.get("type") == "seat":
            taken[record["seat"]] = record
        elif record.get("type") == "free":
            taken.pop(record["seat"], None)
    seat_records = sorted(taken.values(), key=lambda record: record["seat"])
    if set(taken) != {0, 1}:
        raise JournalMismatch("the journal ends before both seats were taken: there is no match to resume")
    if any(r.get("type") == "end" for r in records):
        raise JournalMismatch("the journal's match is over: there is nothing to resume")
    seats = []
    for record in seat_records:
        hello = Hello(
            tuple(record["versions"]), record["name"], record["nonce"], record["table"], record["code"], key=record.get("key"),
            deals=tuple(record["deals"]) if record.get("deals") is not None else None,  # absent before the hidden deal
        )
        seats.append((record["seat"], Seat(record["name"], hello, record["version"], record["token"], None, link=1)))
    inputs: deque[tuple[int, Any]] = deque()
    for record in records:
        kind = record.get("type")
        if kind == "host_seed":
            inputs.append((HOST_SEED, record))
        elif kind == "seed":
            inputs.append((1, Seed(record["game"], record["seed"])))
        elif kind == "play":
            inputs.append((record["seat"], Play(record["request"], record["card"], tuple(record["captures"]))))
        elif kind == "sig":
            inputs.append((record["seat"], Sig(record["of"], record["game"], record["count"], record["signature"])))
        elif kind == "step":  # a step of the hidden deal, or a play of it
            inputs.append((record["seat"], from_wire(record["message"])))
        elif kind not in ("seat", "free", "lock"):  # a lock is handed to the seat of this process that kept it
            raise JournalMismatch(f"the journal has a record of unknown type {kind!r}")
    return seats, inputs


def seat_record(seat: int, entry: Seat) -> dict:
    """The journal record of a seat taken: everything its hello and welcome fixed."""
    hello = entry.hello
    return {
        "type": "seat", "seat": seat, "name": hello.name, "nonce": hello.nonce, "versions": list(hello.versions),
        "table": hello.table, "code": hello.code, "version": entry.version, "token": entry.token, "key": hello.key,
        "deals": list(hello.deals) if hello.deals is not None else None,
    }


def sig_record(seat: int, sig: Sig) -> dict:
    """The journal record of a countersignature taken."""
    return {"type": "sig", "seat": seat, "of": sig.of, "game": sig.game, "count": sig.count, "signature": sig.signature}
