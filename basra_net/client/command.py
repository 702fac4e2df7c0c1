"""Running a seat from the command line: choosing its player, Ctrl-C, the closing lines."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Awaitable, Callable, TypeVar

import trio

from .join import JoinSession, pin_name
from .pinning import KNOWN_HOSTS_FILE, KnownHosts, resolved_pin_addresses
from .storage import data_dir
from .players import BotPlayer, Player
from .session import EXIT_LEFT, SessionResult

T = TypeVar("T")


def make_player(auto_level: str | None, label: str) -> Player:
    """The bot when --auto is given, else the terminal player."""
    if auto_level is not None:
        return BotPlayer(auto_level, log=lambda line: print(f"[{label}] {line}", flush=True))
    from .terminal import TerminalPlayer

    return TerminalPlayer()


async def run_until_interrupted(main: Callable[[trio.Event], Awaitable[T]], grace: float = 5.0) -> T | None:
    """Run main(stop); the first Ctrl-C sets stop so the seat can leave politely.

    A second Ctrl-C, or the grace period running out, cancels main: then the
    result is None.
    """
    stop = trio.Event()
    result = None
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    if stop.is_set():
                        nursery.cancel_scope.cancel()
                        return
                    stop.set()
                    nursery.cancel_scope.deadline = trio.current_time() + grace

        nursery.start_soon(watch)
        result = await main(stop)
        nursery.cancel_scope.cancel()
    return result


def report(result: SessionResult, prefix: str) -> None:
    stream = sys.stdout if result.exit_code == 0 else sys.stderr
    print(f"{prefix}: {result.reason}", file=stream, flush=True)
    if result.transcript_path is not None:
        print(f"{prefix}: transcript saved to {result.transcript_path}", flush=True)


async def ask_join_code(reason: str) -> str | None:
    """Ask the person at the keyboard for the join code; None when input has ended."""

    def ask() -> str | None:
        print(f"basra join: {reason}", flush=True)
        try:
            return input("Join code (as shown on the host's screen): ").strip() or None
        except EOFError:
            return None

    return await trio.to_thread.run_sync(ask, abandon_on_cancel=True)


async def confirm_host_fingerprint(fingerprint: str) -> bool:
    """Ask the person at the keyboard whether the host's screen shows this fingerprint."""

    def ask() -> bool:
        print(
            "basra join: this host is new to you and no join code vouched for its key. Its fingerprint is\n"
            f"    {fingerprint}\n"
            "The host's screen shows its own fingerprint: if the two differ, someone is between you.",
            flush=True,
        )
        try:
            return input("Does the host's screen show the same fingerprint? [y/N] ").strip().lower() in ("y", "yes")
        except EOFError:
            return False

    return await trio.to_thread.run_sync(ask, abandon_on_cancel=True)


def forget_host(host: str, port: int) -> int:
    name = pin_name(host, port)
    pins = KnownHosts(data_dir() / KNOWN_HOSTS_FILE)
    forgotten = [address for address in [name, *resolved_pin_addresses(host, port)] if pins.forget(address)]
    if forgotten:
        print(f"basra forget: the key pinned for {', '.join(forgotten)} is forgotten; the next join pins the key it meets")
    else:
        print(f"basra forget: no key was pinned for {name}")
    return 0


def run_join_command(host: str, port: int, args: argparse.Namespace, announced_fingerprint: str | None = None) -> int:
    player = make_player(args.auto, args.name)
    interactive = args.auto is None and sys.stdin.isatty()
    join = JoinSession(
        host, port, args.name, player, args.transcript,
        table=args.table, code=args.code, plain=args.plain, ask_code=ask_join_code if interactive else None,
        announced_fingerprint=announced_fingerprint,
        confirm_key=confirm_host_fingerprint if interactive else None,
        trust_new_key=args.trust_new_key or args.auto is not None,
    )

    async def main(stop: trio.Event) -> SessionResult:
        return await join.run(stop)

    result = trio.run(run_until_interrupted, main)
    if result is None:
        print("basra join: interrupted", file=sys.stderr)
        return EXIT_LEFT
    report(result, "basra join")
    return result.exit_code
