"""The `basra` command: argument parsing and exit codes, nothing else.

Heavy imports wait until a command needs them, so `basra --help` starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__
from .exits import EXIT_BROKEN_PIPE, EXIT_FAILURE, EXIT_LEFT, EXIT_USAGE
from .options import BOT_LEVELS, DEAL_CHOICES, DEFAULT_BOT, DEFAULT_DEAL, DEFAULT_PORT, DEFAULT_SCORING, GRACE, SCORING_PRESETS


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535; 0 picks a free one)")
    return int(text)


def _name(text: str) -> str:
    from .protocol.text import is_name

    if not is_name(text, 32):
        raise argparse.ArgumentTypeError("a name is 1 to 32 printable characters, without outer spaces")
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 86400")
    return value


def _code(text: str) -> str:
    from .protocol.text import is_printable

    if not 1 <= len(text) <= 32 or not is_printable(text):
        raise argparse.ArgumentTypeError("a join code is 1 to 32 printable characters")
    return text


def _strong_code(text: str) -> str:
    """A code a host requires: no weaker than one it would make itself."""
    from .host.admission import weak_code_problem  # not needed for --help

    code = _code(text)
    problem = weak_code_problem(code)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return code


def _examples(*lines: str) -> str:
    return "example" + ("s" if len(lines) > 1 else "") + ":\n" + "\n".join(f"  {line}" for line in lines)


def _deal_option(command: argparse.ArgumentParser, who: str = "host", offering: str = "the other side offers") -> None:
    command.add_argument(
        "--deal", choices=DEAL_CHOICES, default=DEFAULT_DEAL,
        help=f"hidden (the default): no one, {who} included, sees a card before it is played, whenever {offering}"
        " it too (an older or minimal program gets the commit-reveal deal); commit-reveal: offer only that"
        " simpler deal, for a very slow machine",
    )


def _join_deal_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--deal", choices=DEAL_CHOICES, default=DEFAULT_DEAL,
        help="hidden (the default): no one, the host included, sees a card before it is played; a table that will"
        " not deal hidden hands is refused before any card (exit status 4); commit-reveal: accept the simpler deal,"
        " in which the host's program sees your cards",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="basra",
        description="Egyptian Basra for two players over a LAN, with a deal neither player can fake.",
        epilog="examples:\n  basra host            (then, on the other machine, the command it prints)\n"
        "  basra host --bot      (play the built-in bot)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    host = commands.add_parser("host", help="open a table and play seat 0", description="Open a table and wait for the second player.", epilog=_examples("basra host                      open a table; the screen shows what the other player types", "basra host --bot greedy --target 51   a short match against the bot"), formatter_class=argparse.RawDescriptionHelpFormatter)
    host.add_argument("--bind", default="", metavar="ADDR", help="address to listen on (default: all interfaces)")
    host.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)")
    host.add_argument("--name", type=_name, default="Host", help="your name at the table")
    host.add_argument("--target", type=_positive, default=101, metavar="POINTS", help="points that win the match (default 101)")
    host.add_argument("--scoring", choices=SCORING_PRESETS, default=DEFAULT_SCORING, help=f"scoring preset (default {DEFAULT_SCORING})")
    host.add_argument("--bot", nargs="?", const=DEFAULT_BOT, choices=BOT_LEVELS, metavar="LEVEL",
                      help="seat the built-in bot as the second player (level: search, the default, greedy, beginner or random)")
    host.add_argument("--auto", nargs="?", const=DEFAULT_BOT, choices=BOT_LEVELS, metavar="LEVEL",
                      help="let the bot play your own seat (a headless host)")
    host.add_argument("--transcript", type=Path, metavar="PATH", help="where to save the match transcript")
    host.add_argument("--code", type=_strong_code, metavar="CODE", help="the join code to require (default: a fresh one, unless --auto)")
    host.add_argument("--open", action="store_true", help="no join code: anyone who reaches the port may sit down")
    host.add_argument("--plain", action="store_true", help="plain TCP instead of TLS (for simple clients and debugging)")
    host.add_argument("--grace", type=_seconds, default=GRACE, metavar="SECONDS",
                      help=f"how long a player whose connection dropped is waited for (default {GRACE:.0f})")
    host.add_argument("--journal", type=Path, metavar="PATH", help="where to journal the match for --resume (default: in the data directory)")
    host.add_argument("--resume", nargs="?", const=True, type=Path, metavar="FILE",  # True: the journal written last
                      help="continue the match a crash cut off, from its journal (default: the latest)")
    _deal_option(host)
    host.add_argument("--no-announce", action="store_true", help="do not announce the table on the LAN (`basra join` must be given the address)")

    join = commands.add_parser(
        "join", help="take the second seat at a host's table", description="Join a table opened with `basra host`.",
        epilog=_examples(
            "basra join                                 find the tables announced on the LAN",
            "basra join 192.168.1.20 --code K7M-2QX",
            "basra join myhost.local:6000 --table friday   at a table of `basra serve`",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    join.add_argument("address", nargs="?", metavar="HOST[:PORT]",
                      help=f"the host's address (port {DEFAULT_PORT} unless given; without it, the tables announced on the LAN are looked for)")
    join.add_argument("--name", type=_name, default="Guest", help="your name at the table")
    join.add_argument("--auto", nargs="?", const=DEFAULT_BOT, choices=BOT_LEVELS, metavar="LEVEL", help="let the bot play this seat")
    join.add_argument("--transcript", type=Path, metavar="PATH", help="where to save the match transcript")
    join.add_argument("--table", type=_name, metavar="NAME", help="on a host serving many tables: the table to sit at")
    join.add_argument("--code", type=_code, metavar="CODE", help="the table's join code (asked for when needed)")
    join.add_argument("--plain", action="store_true", help="plain TCP instead of TLS, for a host started with --plain")
    _join_deal_option(join)
    join.add_argument("--trust-new-key", action="store_true",
                      help="pin a host key met for the first time without asking to compare its fingerprint (for scripts; --auto implies it)")

    serve = commands.add_parser(
        "serve", help="run many tables at once, both seats remote",
        description="Serve up to N tables in one process; each joining player takes the next free seat, or the table named by `basra join --table`.", epilog=_examples("basra serve --tables 20 --code club-night", "basra serve --port 6000 --resume   after a crash: every match comes back"), formatter_class=argparse.RawDescriptionHelpFormatter)
    serve.add_argument("--bind", default="", metavar="ADDR", help="address to listen on (default: all interfaces)")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)")
    serve.add_argument("--tables", type=_positive, default=10, metavar="N", help="tables open at once at most (default 10)")
    serve.add_argument("--target", type=_positive, default=101, metavar="POINTS", help="points that win a match (default 101)")
    serve.add_argument("--scoring", choices=SCORING_PRESETS, default=DEFAULT_SCORING, help=f"scoring preset (default {DEFAULT_SCORING})")
    serve.add_argument("--no-transcripts", action="store_true", help="keep no transcript files (load tests)")
    serve.add_argument("--quiet", action="store_true", help="do not log each table's progress")
    serve.add_argument("--code", type=_strong_code, metavar="CODE", help="a join code every player must give (default: none)")
    serve.add_argument("--plain", action="store_true", help="plain TCP instead of TLS")
    serve.add_argument("--grace", type=_seconds, default=GRACE, metavar="SECONDS",
                       help=f"how long a player whose connection dropped is waited for (default {GRACE:.0f})")
    serve.add_argument("--no-announce", action="store_true", help="do not announce the server on the LAN")
    serve.add_argument("--journal", type=Path, metavar="PATH",
                       help="where to journal the tables for --resume (default: serve-PORT.journal in the data directory)")
    serve.add_argument("--no-journal", action="store_true", help="keep no journal: a crash loses every match (load tests)")
    _deal_option(serve, "server", "both players' programs offer")
    serve.add_argument("--resume", action="store_true",
                       help="bring back every match a crashed server on this port (or --journal) left, its players resuming their seats")

    listing = commands.add_parser(
        "list", help="list the tables announced on the LAN", description="Look for the tables announced on the LAN for about two seconds, print them and exit.",
        epilog=_examples("basra list", "basra list --json"), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    listing.add_argument("--json", action="store_true", help="print a JSON array, for scripts")

    forget = commands.add_parser(
        "forget", help="forget a host's pinned key", description="Forget the key pinned for a host, after it really changed.", epilog=_examples("basra forget 192.168.1.20",), formatter_class=argparse.RawDescriptionHelpFormatter)
    forget.add_argument("address", metavar="HOST[:PORT]")

    conformance = commands.add_parser(
        "conformance", help="check another implementation against PROTOCOL.md, case by case",
        description="Check another implementation of the client or the host against PROTOCOL.md, case by case, "
        "printing PASS or FAIL and the section each case tests. Exit status 0 when no case fails.",
        epilog=_examples(
            "basra conformance client --port 0 --exec 'python examples/minimal_client.py 127.0.0.1 {port}'",
            "basra conformance host 127.0.0.1:5252 --code K7M-2QX",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sides = conformance.add_subparsers(dest="side", required=True, metavar="SIDE")
    as_host = sides.add_parser(
        "client", help="run a scripted host for a client to join",
        description="Run a host that puts the client joining it through scripted cases, then version-2 matches "
        "(signed, each deal mode) in which the host's signature, a score or a proof is made wrong on the way.",
        epilog=_examples("basra conformance client --plain --exec 'python examples/minimal_client.py --plain 127.0.0.1 {port}'"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    as_host.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)")
    as_host.add_argument("--plain", action="store_true", help="plain TCP instead of TLS")
    as_host.add_argument("--exec", metavar="COMMAND",
                         help="run the client under test for each match ({port} is replaced), and judge its exit status too")
    as_host.add_argument("--target", type=_positive, default=101, metavar="POINTS",
                         help="the honest match's target; a higher one plays more games, for more situations to arise (default 101)")
    as_client = sides.add_parser(
        "host", help="check a host, playing a client against it",
        description="Play a client against a host: refusals, limits, out-of-turn, stale and illegal plays, resume, "
        "a whole match verified, and in version 2 signed matches of each deal mode with forged signatures and false proofs.",
        epilog=_examples(
            "basra conformance host 127.0.0.1:5252 --plain",
            "basra conformance host 127.0.0.1:5252 --code K7M-2QX --exec 'basra host --auto greedy --code K7M-2QX --port {port}'",
        ), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    as_client.add_argument("address", metavar="HOST[:PORT]", help=f"the host's address (port {DEFAULT_PORT} unless given)")
    as_client.add_argument("--plain", action="store_true", help="plain TCP instead of TLS")
    as_client.add_argument("--code", type=_code, metavar="CODE", help="the host's join code, to check its refusals and lockout")
    as_client.add_argument("--exec", metavar="COMMAND",
                           help="start the host under test with this command for each match ({port} is replaced by the address's port); "
                           "without it, a host that plays one match plays one match in version 2, and the cases that need a match of their own are skipped")
    as_client.add_argument("--sign-wait", type=float, default=None, metavar="SECONDS",
                           help="how long the host waits for a countersignature or a step of the hidden deal "
                           "(PROTOCOL.md 14.8 and 15.15: 40); 0 leaves those cases out")

    verify = commands.add_parser("verify", help="re-check a saved transcript offline", description="Re-check every deal, play, score and signature of a transcript, and say what it proves. Exit status: 0 proven, 1 not proven or cut short, 2 not a readable transcript, 3 a cheat proven.", epilog=_examples("basra verify 20261130-162032-d2a3079e059e-guest.basra   (the file a match ended by naming)", "basra verify --partial 20261130-162032-d2a3079e059e-guest.basra   (a record cut short: what holds up to the cut)"), formatter_class=argparse.RawDescriptionHelpFormatter)
    _past_match_arguments(verify)
    verify.add_argument("--verbose", "-v", action="store_true", help="print the intermediate values of every shuffle")
    verify.add_argument("--partial", action="store_true", help="for a record cut short: report what is proven up to its last host signature")
    replay = commands.add_parser(
        "replay", help="step through a saved match on screen",
        description="Step through a transcript as its seat saw it: forward and back, game by game, every hand once a game is over.",
        epilog=_examples("basra replay 20261130-162032-d2a3079e059e-guest.basra"), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _past_match_arguments(replay)
    history = commands.add_parser(
        "history", help="list the matches played, newest first",
        description="List the matches whose transcripts are in the data directory, newest first: date, opponent, "
        "result, deal and basra verify's verdict. `basra verify N` and `basra replay N` open the one numbered N.",
        epilog=_examples("basra history", "basra replay --last", "basra verify 3"), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    history.add_argument("--json", action="store_true", help="print a JSON array, for scripts")
    return parser


def _past_match_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("file", type=Path, nargs="?", metavar="FILE", help="a transcript, or a match's number in `basra history`")
    command.add_argument("--last", action="store_true", help="the match played last (number 1 in `basra history`)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = _run(args)
        sys.stdout.flush()  # here, where a reader that went away is handled, and not at exit
        return code
    except KeyboardInterrupt:
        print(f"basra {args.command}: interrupted", file=sys.stderr)
        return EXIT_LEFT
    except Exception as err:  # a bug: one line for the user, the traceback kept in a file for a report
        if _only_broken_pipes(err) and _stdout_reader_gone():
            return _quiet_exit_for_a_closed_stdout()
        from .crash import write_crash_report

        print(f"basra {args.command}: {write_crash_report(err, argv if argv is not None else sys.argv[1:])}", file=sys.stderr)
        return EXIT_FAILURE
    except BaseExceptionGroup as group:  # a Ctrl-C that reached a task of trio's, with nothing else wrong
        if group.split(KeyboardInterrupt)[1] is not None:
            raise
        print(f"basra {args.command}: interrupted", file=sys.stderr)
        return EXIT_LEFT


def _only_broken_pipes(err: Exception) -> bool:
    if isinstance(err, ExceptionGroup):
        return err.split(BrokenPipeError)[1] is None
    return isinstance(err, BrokenPipeError)


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (`basra ... | head`), not some socket's peer."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no descriptor of its own (a test's capture), or no poll
        return False


def _quiet_exit_for_a_closed_stdout() -> int:
    """Stop quietly: what was wanted was read, and there is no one left to tell.

    stdout is pointed at the null device so that flushing it at exit does not raise again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except OSError:
        pass
    return EXIT_BROKEN_PIPE


def _run(args: argparse.Namespace) -> int:
    if args.command == "history":
        from .client.history import show_history

        return show_history(args.json)
    if args.command in ("replay", "verify"):
        from .client.history import named_transcript

        path = named_transcript(args.file, args.last, args.command)
        if path is None:
            return EXIT_USAGE
        if args.command == "replay":
            from .client.replay import replay_file

            return replay_file(path)
        from .client.verify_file import verify_file

        return verify_file(path, verbose=args.verbose, partial=args.partial)
    if args.command == "list" or (args.command == "join" and args.address is None):
        from .client.discovery import join_announced_table, list_tables

        return list_tables(args.json) if args.command == "list" else join_announced_table(args)
    if args.command in ("join", "forget"):
        from .client.address import parse_address

        try:
            host, port = parse_address(args.address)
        except ValueError as err:
            print(f"basra {args.command}: {err}", file=sys.stderr)
            return EXIT_USAGE
        if args.command == "forget":
            from .client.command import forget_host

            return forget_host(host, port)
        from .client.command import run_join_command

        return run_join_command(host, port, args)
    if args.command == "conformance":
        from .conformance.command import run_conformance_command

        return run_conformance_command(args)
    if args.command == "serve":
        from .host.command import run_serve_command

        return run_serve_command(args)
    from .host.command import run_host_command

    return run_host_command(args)


if __name__ == "__main__":
    sys.exit(main())
