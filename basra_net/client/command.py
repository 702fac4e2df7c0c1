"""Running a seat from the command line: choosing its player, Ctrl-C, the closing lines.

The session and its connection are imported inside the match's own
coroutine, so that on a terminal the first screen is drawn while they load.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import TYPE_CHECKING, Awaitable, Callable, TypeVar

import trio

if TYPE_CHECKING:
    from .players import Player
    from .session import SessionResult
    from .tui import ScreenPlayer

T = TypeVar("T")


def wants_screen(auto_level: str | None) -> bool:
    """The full-screen interface for a person at a terminal; the line prompt when input or output is not one."""
    return auto_level is None and sys.stdin.isatty() and sys.stdout.isatty()


def make_player(auto_level: str | None, label: str, *, fingerprint: bool = True) -> Player:
    """The bot when --auto is given, else the line prompt (the full screen is run by run_seat_on_screen).

    ``fingerprint``: whether the line prompt shows the host key's fingerprint (not in a bot game, nor over plain TCP).
    """
    if auto_level is not None:
        from .players import BotPlayer

        return BotPlayer(auto_level, log=lambda line: print(f"[{label}] {line}", flush=True))
    from .terminal import TerminalPlayer

    return TerminalPlayer(fingerprint=fingerprint)


def run_seat_on_screen(main: Callable[[ScreenPlayer, trio.Event], Awaitable[T]], *, fingerprint: bool) -> T | None:
    """Run a seat behind the full-screen interface, with Ctrl-C (or SIGTERM) handled as run_until_interrupted does."""
    from .tui import run_on_screen

    async def interruptible(player: ScreenPlayer, leave: trio.Event) -> T | None:
        return await run_until_interrupted(lambda stop: main(player, stop), stop=leave)

    return run_on_screen(interruptible, fingerprint=fingerprint)


async def run_until_interrupted(
    main: Callable[[trio.Event], Awaitable[T]], grace: float = 5.0, stop: trio.Event | None = None,
    finishing: Callable[[], bool] = lambda: False,
) -> T | None:
    """Run main(stop); the first Ctrl-C sets stop so the seat can leave politely.

    A second Ctrl-C, or the grace period running out, cancels main: then the
    result is None.  ``stop`` may be given, for something else to set too.
    While ``finishing()`` holds there is nothing left to leave (a host whose
    match is decided, waiting for the other seat to take its end within the
    table's own bounds): a first Ctrl-C starts no grace then, for cutting
    that wait would lose the other seat's countersignature of the result;
    a second still ends main at once.
    """
    stop = trio.Event() if stop is None else stop
    result = None
    failure: Exception | None = None
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    if stop.is_set():
                        nursery.cancel_scope.cancel()
                        return
                    stop.set()
                    if not finishing():
                        nursery.cancel_scope.deadline = trio.current_time() + grace

        nursery.start_soon(watch)
        try:
            result = await main(stop)
        except Exception as err:  # re-raised below, outside the nursery, so callers see it bare (a port in use, say)
            failure = err
        nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


def report(result: SessionResult, prefix: str) -> None:
    stream = sys.stdout if result.exit_code == 0 else sys.stderr
    say_result(result, prefix)
    print(f"{prefix}: {result.reason}", file=stream, flush=True)
    if result.transcript_path is not None:
        print(f"{prefix}: transcript saved to {result.transcript_path}", flush=True)


def say_result(result: SessionResult | None, prefix: str) -> None:
    """The match's result, kept on the terminal after the screen is gone."""
    from .screen import match_summary

    summary = match_summary(result.state) if result is not None else None
    if summary is not None:
        print(f"{prefix}: {summary}", flush=True)


def typed_answer(prompt: str) -> str | None:
    """A line typed at the terminal after ``prompt``, without its end; None when input ended first.

    Every question before the match reads this way, so that one question's reading never takes the next one's line."""
    from .terminal import typed_line

    print(prompt, end="", flush=True)
    return typed_line(sys.stdin)


async def ask_join_code(reason: str) -> str | None:
    """Ask the person at the keyboard for the join code; None when they gave none (an empty line, or input ended)."""

    def ask() -> str | None:
        print(f"basra join: {reason}", flush=True)
        return (typed_answer("Join code (as shown on the host's screen): ") or "").strip() or None

    return await trio.to_thread.run_sync(ask, abandon_on_cancel=True)


async def confirm_host_fingerprint(fingerprint: str) -> bool:
    """Ask the person at the keyboard whether the host's screen shows this fingerprint; PlayerLeft when input ended."""
    from .players import PlayerLeft

    def ask() -> str | None:
        print(
            "basra join: this host is new to you and no join code vouched for its key. Its fingerprint is\n"
            f"    {fingerprint}\n"
            "The host's screen shows its own fingerprint: if the two differ, someone is between you.",
            flush=True,
        )
        return typed_answer("Does the host's screen show the same fingerprint? [y/N] ")

    answer = await trio.to_thread.run_sync(ask, abandon_on_cancel=True)
    if answer is None:
        raise PlayerLeft("you left the match")
    return answer.strip().lower() in ("y", "yes")


def forget_host(host: str, port: int) -> int:
    from ..protocol.fingerprint import key_fingerprint
    from .address import pin_name
    from .pinning import KNOWN_HOSTS_FILE, KnownHosts, resolved_pin_addresses
    from ..files import data_dir

    name = pin_name(host, port)
    pins = KnownHosts(data_dir() / KNOWN_HOSTS_FILE)
    forgotten = [(address, key) for address in [name, *resolved_pin_addresses(host, port)] if (key := pins.forget(address)) is not None]
    if forgotten:
        said = ", ".join(f"{address} (fingerprint {key_fingerprint(key)})" for address, key in forgotten)
        print(f"basra forget: the key pinned for {said} is forgotten; the next join pins the key it meets")
    else:
        print(f"basra forget: no key was pinned for {name}")
    return 0


def run_join_command(
    host: str, port: int, args: argparse.Namespace, announced_fingerprint: str | None = None, code_needed: bool = False
) -> int:
    def join(player: Player, ask_code, confirm_key, accept_commit_reveal=None):
        from .join import JoinSession
        from .session import JOIN_DEAL_OFFERS

        return JoinSession(
            host, port, args.name, player, args.transcript, table=args.table, code=args.code, plain=args.plain, ask_code=ask_code,
            announced_fingerprint=announced_fingerprint, confirm_key=confirm_key,
            trust_new_key=args.trust_new_key or args.auto is not None, deal_modes=JOIN_DEAL_OFFERS[args.deal],
            code_needed=code_needed, accept_commit_reveal=accept_commit_reveal,
        )

    if wants_screen(args.auto):
        result = run_seat_on_screen(
            lambda player, stop: join(player, player.ask_code, player.confirm_fingerprint, player.accept_commit_reveal).run(stop),
            fingerprint=not args.plain
        )
    else:
        interactive = args.auto is None and sys.stdin.isatty()
        session = join(
            make_player(args.auto, args.name, fingerprint=not args.plain),
            ask_join_code if interactive else None,
            confirm_host_fingerprint if interactive else None,
        )
        result = trio.run(run_until_interrupted, session.run)
    if result is None:
        from .session import EXIT_LEFT

        print("basra join: interrupted", file=sys.stderr)
        return EXIT_LEFT
    report(result, "basra join")
    return result.exit_code
