"""`basra serve`'s collections: start-up frozen, automatic collections off, a full one when the heap has grown or a while has passed."""

from __future__ import annotations

import gc
import sys

import trio
import trio.testing

from basra_net.host import command


def test_serve_freezes_start_up_and_turns_automatic_collections_off_then_gives_both_back(monkeypatch):
    from basra_net import cli

    seen = []
    monkeypatch.setattr(command.trio, "run", lambda *args: seen.append((gc.isenabled(), gc.get_freeze_count() > 0)))
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert command.run_serve_command(cli.build_parser().parse_args(["serve", "--no-journal"])) == 0
    assert seen == [(False, True)]
    assert gc.isenabled() and gc.get_freeze_count() == 0


def run_collector(monkeypatch, blocks: list[int], seconds: float) -> list[float]:
    """When collect_on_growth collects over ``seconds`` of a mock clock, the heap reading ``blocks`` in turn, then the last for good."""
    readings = iter(blocks)
    last = [blocks[-1]]

    def allocated_blocks() -> int:
        last[0] = next(readings, last[0])
        return last[0]

    collected = []
    monkeypatch.setattr(sys, "getallocatedblocks", allocated_blocks)
    monkeypatch.setattr(gc, "collect", lambda: collected.append(trio.current_time()))

    async def main() -> None:
        with trio.move_on_after(seconds):
            await command.collect_on_growth()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return collected


def test_a_full_collection_runs_once_the_heap_has_grown_past_its_limit(monkeypatch):
    check = command.SERVE_HEAP_CHECK_EVERY
    limit = 1000 * command.SERVE_HEAP_GROWTH
    # Read at the start, then once a check: below the limit, past it (collect), after the collection, below the new limit.
    collected = run_collector(monkeypatch, [1000, int(limit) - 1, int(limit) + 1, 1500, 1600], 5.5 * check)
    assert collected == [2 * check]


def test_a_full_collection_runs_after_a_while_without_growth(monkeypatch):
    every = command.SERVE_FULL_COLLECTION_EVERY
    collected = run_collector(monkeypatch, [1000], 2.5 * every)
    assert len(collected) == 2
    assert every <= collected[0] < every + 2 * command.SERVE_HEAP_CHECK_EVERY
