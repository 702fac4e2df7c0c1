"""`basra host` from the command line: settings from the arguments, the closing lines, the exit code."""

from __future__ import annotations

import argparse
import sys

import trio

from ..client.command import make_player, run_until_interrupted
from ..client.players import BotPlayer
from ..client.session import EXIT_FAILURE, EXIT_LEFT, EXIT_OK
from .admission import make_join_code
from ..cli import LATEST
from .server import CannotResume, HostOutcome, HostSettings, ServeSettings, latest_journal, run_host, run_serve


def _join_code(args: argparse.Namespace) -> str | None:
    """An interactive table gets a fresh code; a headless one (--auto) is open unless given --code."""
    if args.open:
        return None
    if args.code:
        return args.code
    return None if args.auto is not None else make_join_code()


def run_host_command(args: argparse.Namespace) -> int:
    settings = HostSettings(
        bind=args.bind,
        port=args.port,
        name=args.name,
        target=args.target,
        scoring=args.scoring,
        transcript=args.transcript,
        code=_join_code(args),
        tls=not args.plain,
        grace=args.grace,
        journal=args.journal,
        announce=not args.no_announce,
    )
    try:
        if args.resume is not None:
            settings.resume = latest_journal() if args.resume == LATEST else args.resume
    except CannotResume as err:
        print(f"basra host: {err}", file=sys.stderr)
        return EXIT_FAILURE
    own_player = make_player(args.auto, args.name)
    bot = BotPlayer(args.bot) if args.bot else None
    headless = args.auto is not None

    def say(line: str) -> None:
        print(line, flush=True)

    async def main(stop: trio.Event) -> HostOutcome:
        return await run_host(
            settings, own_player, bot_player=bot, bot_level=args.bot, say=say, log=say if headless else None, stop=stop
        )

    try:
        outcome = trio.run(run_until_interrupted, main)
    except CannotResume as err:
        print(f"basra host: {err}", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as err:
        print(f"basra host: cannot open the table: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILURE
    if outcome is None:
        print("basra host: interrupted", file=sys.stderr)
        return EXIT_LEFT
    print(f"basra host: transcript saved to {outcome.transcript_path}", flush=True)
    if outcome.table.completed:
        print("basra host: the match is over", flush=True)
        return EXIT_OK
    own = outcome.own_seat
    if own is not None and own.exit_code == EXIT_LEFT:
        print("basra host: you left the match", file=sys.stderr)
        return EXIT_LEFT
    print(f"basra host: the match did not finish: {outcome.table.reason}", file=sys.stderr)
    return EXIT_FAILURE


def run_serve_command(args: argparse.Namespace) -> int:
    settings = ServeSettings(
        bind=args.bind,
        port=args.port,
        tables=args.tables,
        target=args.target,
        scoring=args.scoring,
        keep_transcripts=not args.no_transcripts,
        code=args.code,
        tls=not args.plain,
        grace=args.grace,
        announce=not args.no_announce,
    )

    def say(line: str) -> None:
        print(line, flush=True)

    async def main(stop: trio.Event) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: run_serve(settings, say=say, log=(lambda line: None) if args.quiet else say))
            await stop.wait()
            nursery.cancel_scope.cancel()

    try:
        trio.run(run_until_interrupted, main)
    except OSError as err:
        print(f"basra serve: cannot open the port: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILURE
    print("basra serve: stopped", flush=True)
    return EXIT_OK
