"""`basra host` from the command line: settings from the arguments, the closing lines, the exit code.

The host and its session are imported inside the match's own coroutine, so
that on a terminal the first screen is drawn while they load.
"""

from __future__ import annotations

import argparse
import gc
import sys
from functools import partial
from typing import TYPE_CHECKING, Callable

import trio

from ..client.command import run_seat_on_screen, run_until_interrupted, say_result, wants_screen
from ..exits import EXIT_FAILURE, EXIT_LEFT, EXIT_OK

if TYPE_CHECKING:
    from ..client.players import Player
    from .server import HostOutcome


def _join_code(args: argparse.Namespace) -> str | None:
    """An interactive table gets a fresh code; a headless one (--auto) is open unless given --code."""
    from .admission import make_join_code

    if args.open:
        return None
    if args.code:
        return args.code
    return None if args.auto is not None else make_join_code()


def _say(line: str) -> None:
    print(line, flush=True)


async def _host(
    args: argparse.Namespace,
    own_player: Player,
    say: Callable[[str], None],
    stop: trio.Event,
    match_over: trio.Event | None = None,
) -> HostOutcome:
    from ..client.players import BotPlayer
    from ..client.session import DEAL_OFFERS
    from .server import HostSettings, latest_journal, run_host

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
        deal_modes=DEAL_OFFERS[args.deal],
    )
    if args.resume is not None:
        settings.resume = latest_journal() if args.resume is True else args.resume
    bot = BotPlayer(args.bot) if args.bot else None
    headless = args.auto is not None
    return await run_host(
        settings, own_player, bot_player=bot, bot_level=args.bot, say=say, log=say if headless else None, stop=stop,
        match_over=match_over,
    )


def run_host_command(args: argparse.Namespace) -> int:
    # The fingerprint means something only to a second person comparing it over TLS.
    fingerprint = not (args.bot or args.plain)
    try:
        if wants_screen(args.auto):
            outcome = run_seat_on_screen(
                lambda player, stop: _host(args, player, player.say, stop), fingerprint=fingerprint
            )
        else:
            from ..client.command import make_player

            own_player = make_player(args.auto, args.name, fingerprint=fingerprint)
            match_over = trio.Event()  # once set, a Ctrl-C leaves nothing: the guest takes its end as without one
            outcome = trio.run(
                partial(run_until_interrupted, finishing=match_over.is_set), lambda stop: _host(args, own_player, _say, stop, match_over)
            )
    except Exception as err:
        from .server import CannotListen, CannotResume

        if not isinstance(err, (CannotListen, CannotResume)):
            raise
        print(f"basra host: {err}", file=sys.stderr)
        return EXIT_FAILURE
    if outcome is None:
        print("basra host: interrupted", file=sys.stderr)
        return EXIT_LEFT
    say_result(outcome.own_seat, "basra host")
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


# The young generation's size at `basra serve`.  Each play makes a few hundred short-lived containers, so at
# the default of 700 the collector ran after every few plays, and every tenth young collection walked the
# middle generation, every hundredth all of it, every live table included: at 500 tables, collections took
# about a fifth of the server's CPU, and about a twentieth with this size, for the same memory.  gc.freeze()
# after start-up did not pay there: the objects the old collections walk are the tables', made after start-up.
SERVE_YOUNG_GENERATION = 10_000


def run_serve_command(args: argparse.Namespace) -> int:
    from .journal import JournalError
    from .server import CannotListen, ServeSettings, run_serve

    if args.resume and args.no_journal:
        print("basra serve: --resume continues a journal, so it cannot go with --no-journal", file=sys.stderr)
        return EXIT_FAILURE

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
        journal=not args.no_journal,
        journal_path=args.journal,
        resume=args.resume,
        hidden_hands=args.deal == "hidden",
    )

    async def main(stop: trio.Event) -> None:
        await run_serve(settings, say=_say, log=(lambda line: None) if args.quiet else _say, stop=stop)

    thresholds = gc.get_threshold()
    gc.set_threshold(SERVE_YOUNG_GENERATION, *thresholds[1:])
    try:
        trio.run(run_until_interrupted, main)
    except (CannotListen, JournalError) as err:
        print(f"basra serve: {err}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        gc.set_threshold(*thresholds)
    print("basra serve: stopped", flush=True)
    return EXIT_OK
