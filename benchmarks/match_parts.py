"""What each part of a match's life costs `basra serve`, from a py-spy profile of the host under load.

load.py plays matches of one game: every ~50 plays both seats close and
reconnect, and the host pays for the accepts, handshakes, welcomes, the
match's start, the deal, the game's end (reveal, signatures, the
countersignatures' checks), the linger for the end and the closes.  This
splits the host's samples among those parts and the plays themselves, each
sample going to the part of the innermost function of its stack that names
one, and prints each part's share of the host's samples and, given the
host's CPU per play and the plays per match that load.py printed in the same
run, its cost in us per play and per match.

    py-spy record --subprocesses --nonblocking -r 200 -f raw -o host.txt -- \\
        python benchmarks/load.py --tables 500 --modes flat --transport plain --seconds 14 --warmup 2 --repeat 1 --no-relay
    python benchmarks/match_parts.py host.txt --us-per-play 147 --plays-per-match 51

(--plays-per-match: plays/s times the window's seconds over the matches ended in the window.)
"""

from __future__ import annotations

import argparse
from collections import Counter

# Each part, by the functions (py-spy's names, "Class.method" or "function") whose samples are its own.
PARTS: dict[str, tuple[str, ...]] = {
    "accept": ("_accept_from",),
    "handshake (gate, first bytes, hello)": ("_admit", "_first_bytes", "_receive_hello", "_handshake", "_tls_handshake", "_refuse"),
    "seating (lobby, new table)": ("Lobby.seat_for", "Lobby.seat_holding", "Lobby._open", "Lobby._start"),
    "welcome": ("_welcome", "Table.seat_joined"),
    "match start": ("MatchStarts.idle", "Outbox.start", "Table.welcomed", "Table._run_match"),
    "deal (seed, commit, deck)": ("Dealer.host_seed", "Dealer.commit", "Dealer.seed_in", "Table.deck_for", "Match.start_game",
                                  "Table._play_fixed_deal_game"),
    "plays": ("Table._play_turns", "Table._play_at_once", "_relay_inbound"),
    "game end (reveal, signatures, countersignatures)": ("Dealer.reveal", "Table._countersignatures", "Table._countersignature",
                                                         "ChannelRecord.host_signature"),
    "linger": ("Table._linger",),
    "close": ("close_gracefully", "Outbox.stop", "aclose_forcefully", "Lobby._closed", "Table.cut_off"),
    "connection task (its start, its own frames)": ("_handle_connection", "_Door.serve", "serve_connection", "_serve_seat"),
}
_PART_OF = {function: part for part, functions in PARTS.items() for function in functions}


def host_samples(path: str, process: str) -> tuple[Counter, int]:
    """Samples by part, and all the host's samples, from a py-spy raw file (one "frame;frame;... count" line each)."""
    parts: Counter = Counter()
    total = 0
    with open(path) as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if process not in stack:
                continue
            samples = int(count)
            total += samples
            part = "other (trio's loop, the journal)"
            for frame in reversed(stack.split(";")):
                found = _PART_OF.get(frame.split(" (")[0])
                if found is not None:
                    part = found
                    break
            parts[part] += samples
    return parts, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", help="py-spy's raw output (-f raw)")
    parser.add_argument("--us-per-play", type=float, help="the host's CPU per play, as load.py printed it in the same run")
    parser.add_argument("--plays-per-match", type=float, help="plays per match in the same run")
    parser.add_argument("--process", default=" serve ", help="text that marks the host's stacks (default: ' serve ')")
    args = parser.parse_args()
    parts, total = host_samples(args.profile, args.process)
    if not total:
        raise SystemExit(f"no samples of a process matching {args.process!r} in {args.profile}")
    print(f"{total} samples of the host")
    print(f"{'part':52s} {'share':>7s} {'us/play':>8s} {'us/match':>9s}")
    for part in [*PARTS, "other (trio's loop, the journal)"]:
        share = parts[part] / total
        per_play = share * args.us_per_play if args.us_per_play else float("nan")
        per_match = per_play * args.plays_per_match if args.plays_per_match else float("nan")
        print(f"{part:52s} {share:7.1%} {per_play:8.1f} {per_match:9.0f}")


if __name__ == "__main__":
    main()
