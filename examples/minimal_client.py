#!/usr/bin/env python3
"""A complete headless basra-net client in one file, written from PROTOCOL.md alone.

    python minimal_client.py [--plain] HOST PORT [NAME]

It speaks TLS 1.3 (section 5.5) unless given --plain (for a host started with
--plain); over TLS it checks that the key in `welcome` is the certificate's key
and prints the key's fingerprint for the player to compare with the host's
screen (it keeps no pins between runs, as a full client does).

It takes the second seat at a basra-net host, answers every commitment with a
fresh seed, plays a random legal move from every `your_turn`, answers every
`ping`, resumes its seat when the connection breaks (5.8), and checks each
deal itself when the host reveals its seed (PROTOCOL.md 9.10): both
signatures, the commitment, the deck order (its own shuffle, 9.4 to 9.7), and
the deal (9.8): every card it was dealt, the first table, the cards moved to
the stock, and that every card seat 0 played was in seat 0's hand for that
hand. It prints one line per game, "game N: deal verified".

It does NOT replay the rules: it does not recompute captures, the moves it is
offered, or the scores, so it shows that the deal was fair, not that the host
counted the points correctly. A full client adds a rules engine for that
(9.10, last paragraph).

Exit status: 0 after `match_end` with every deal verified; 3 when a deal
check fails or a game's deal is never revealed; 1 on a protocol or network
error; 2 on a usage error. It needs only the standard library, msgpack and
cryptography.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import random
import socket
import ssl
import struct
import sys
import time

import msgpack
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

VERSION = 1
MAX_FRAME = 65536
RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
CARDS = [rank + suit for suit in "SHDC" for rank in RANKS]  # index = suit * 13 + rank - 1 (4.8)
FATAL = {"bad_frame", "bad_msgpack", "bad_message", "unknown_type", "unsupported_version",
         "table_full", "timeout", "internal", "code_required", "wrong_code", "too_many_attempts",
         "busy", "rate_limit", "unknown_token", "bad_resume"}  # section 8


class ProtocolFailure(Exception):
    """The host broke the protocol or the connection failed: exit 1."""


# --- framing (section 3) ----------------------------------------------------------------


class ConnectionLost(ProtocolFailure):
    """The connection ended or broke without a fatal error: the seat can be resumed (5.8)."""


class Connection:
    def __init__(self, host: str, port: int, tls: bool) -> None:
        self.address, self.tls = (host, port), tls
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small frames, sent at once
        self.certificate_key: bytes | None = None
        if tls:
            # The certificate is self-signed: trust comes from its key, checked against welcome (5.5).
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.minimum_version = ssl.TLSVersion.TLSv1_3
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            self.sock = context.wrap_socket(self.sock)
            certificate = x509.load_der_x509_certificate(self.sock.getpeercert(binary_form=True))
            self.certificate_key = certificate.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
            digest = hashlib.sha256(self.certificate_key).hexdigest()[:16]
            print("host key fingerprint " + " ".join(digest[i:i + 4] for i in range(0, 16, 4)), flush=True)
        self.sock.settimeout(None)  # version 1 sets no time limit on a move, so neither do we

    def send(self, message: dict) -> None:
        body = msgpack.packb(message, use_bin_type=True)
        try:
            self.sock.sendall(struct.pack(">I", len(body)) + body)
        except OSError:
            pass  # the break shows when reading; a resume sends the answer again (5.8, rule 6)

    def _read_exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            try:
                chunk = self.sock.recv(size - len(data))
            except OSError as err:
                raise ConnectionLost(f"the connection broke: {err}") from None
            if not chunk:
                raise ConnectionLost("the host closed the connection")
            data += chunk
        return data

    def receive(self) -> dict:
        (length,) = struct.unpack(">I", self._read_exactly(4))
        if not 1 <= length <= MAX_FRAME:  # checked before reading the body (3.4)
            raise ProtocolFailure(f"bad frame length {length}")
        body = self._read_exactly(length)
        try:  # strict enough for a client that trusts its host's encoder: one map, str keys, no ext
            message = msgpack.unpackb(body, raw=False, strict_map_key=True, ext_hook=_no_ext)
        except Exception as err:
            raise ProtocolFailure(f"undecodable frame: {err}") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ProtocolFailure("a frame that is not a message map")
        return message


def _no_ext(code, data):
    raise ValueError("msgpack ext types are not allowed")


# --- the fair deal (section 9) ---------------------------------------------------------------


def lp(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def commitment(match_id: bytes, game: int, nonce: bytes, host_seed: bytes) -> bytes:
    return hashlib.sha256(
        lp(b"basra-net/v1/commit") + lp(match_id) + struct.pack(">I", game) + lp(nonce) + lp(host_seed)
    ).digest()


def deck_order(match_id: bytes, game: int, host_seed: bytes, client_seed: bytes) -> list[int]:
    key = hashlib.sha256(
        lp(b"basra-net/v1/deck-key") + lp(match_id) + struct.pack(">I", game) + lp(host_seed) + lp(client_seed)
    ).digest()

    def words():
        block = 0
        while True:
            yield from struct.unpack(">8I", hmac.digest(key, struct.pack(">Q", block), "sha256"))
            block += 1

    stream = words()

    def uniform(n: int) -> int:  # bitmask rejection sampling (9.7)
        mask = (1 << (n - 1).bit_length()) - 1
        while True:
            r = next(stream) & mask
            if r < n:
                return r

    deck = list(range(52))
    for i in range(51, 0, -1):
        j = uniform(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


# Points of small order: signatures under them can verify for any message (9.9).
WEAK_KEYS = {bytes.fromhex(h) for h in (
    "0100000000000000000000000000000000000000000000000000000000000000",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
)}


def signature_ok(host_key: bytes, signature: bytes, label: bytes, match_id: bytes, game: int, value: bytes) -> bool:
    signed = lp(label) + lp(match_id) + struct.pack(">I", game) + lp(value)  # 9.9
    if host_key in WEAK_KEYS:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(host_key).verify(signature, signed)
        return True
    except (InvalidSignature, ValueError):
        return False


def deal_from(deck: list[int], dealer: int) -> dict:
    """Who gets which card (9.8): hands[hand_no][seat], the first table, the moved cards."""
    first = 1 - dealer
    table, stock, moved = deck[8:12], deck[12:], []
    for p in range(4):
        while table[p] % 13 == 10 or CARDS[table[p]] == "7D":  # a Jack, or the 7 of diamonds
            moved.append(table[p])
            stock.append(table[p])
            table[p] = stock.pop(0)
    hands = {1: {first: deck[0:4], dealer: deck[4:8]}}
    for hand_no in range(2, 7):
        start = 8 * (hand_no - 2)
        hands[hand_no] = {first: stock[start : start + 4], dealer: stock[start + 4 : start + 8]}
    return {"hands": hands, "table": table, "moved": moved}


# --- one game's record, checked at the reveal ------------------------------------------------


def names(cards: list[int]) -> list[str]:
    return [CARDS[c] for c in cards]


class GameRecord:
    def __init__(self, commit: dict, my_seed: bytes) -> None:
        self.commit = commit
        self.my_seed = my_seed
        self.dealer: int | None = None
        self.hand_no = 0
        self.my_hands: dict[int, list[str]] = {}
        self.first_table: list[str] = []
        self.moved: list[str] = []
        self.seat0_plays: list[tuple[int, str]] = []  # (hand number, card)
        self.revealed = False
        self.failed = False


def check_game(game: int, record: GameRecord, reveal: dict, match_id: bytes, host_key: bytes,
               nonce: bytes) -> list[str]:
    """Everything wrong with this game's deal; empty when it was the fair deal."""
    host_seed = reveal["seed"]
    if not signature_ok(host_key, reveal["signature"], b"basra-net/v1/reveal-sig", match_id, game, host_seed):
        return ["the reveal signature does not verify"]
    if commitment(match_id, game, nonce, host_seed) != record.commit["commitment"]:
        return ["the revealed seed does not match the commitment"]
    dealt = deal_from(deck_order(match_id, game, host_seed, record.my_seed), record.dealer)
    problems = []
    for hand_no, hand in sorted(record.my_hands.items()):
        expected = names(dealt["hands"][hand_no][1])
        if hand != expected:
            problems.append(f"hand {hand_no}: dealt {hand}, the deck gives {expected}")
    if record.first_table != names(dealt["table"]):
        problems.append(f"table: {record.first_table}, the deck gives {names(dealt['table'])}")
    if record.moved != names(dealt["moved"]):
        problems.append(f"moved to the stock: {record.moved}, the deck gives {names(dealt['moved'])}")
    for hand_no, card in record.seat0_plays:
        if card not in names(dealt["hands"][hand_no][0]):
            problems.append(f"seat 0 played {card} in hand {hand_no}, not in its hand by the deck")
    return problems


# --- the session ----------------------------------------------------------------------------


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise ProtocolFailure(what)


def unrevealed(games: dict[int, GameRecord]) -> bool:
    """Report every game whose seed went out but whose deal was never revealed (10.2)."""
    found = False
    for game, record in sorted(games.items()):
        if not record.revealed:
            found = True
            print(f"game {game}: NOT VERIFIED: the host abandoned a fixed deal", flush=True)
    return found


STREAM = {"match_start", "commit", "deal", "your_turn", "played", "game_end", "reveal", "match_end"}  # 5.8, rule 2
RESUME_TRIES = 12  # about a minute of tries, waiting 0.25 s, then twice as long each time, up to 5 s


class Seat:
    """What this client keeps to resume its seat (5.8): the welcome, a count, its unconfirmed answers."""

    def __init__(self, name: str) -> None:
        self.name, self.nonce = name, os.urandom(32)
        self.welcome: dict | None = None
        self.received = 0  # stream messages taken, over all connections
        self.sent_at_welcome = 0  # the stream count the host had reached at the last welcome
        self.unconfirmed_seed: dict | None = None  # until a deal of hand 1 arrives
        self.unconfirmed_play: dict | None = None  # until a played by this seat arrives
        self.open_request: int | None = None


def play_match(conn: Connection, name: str) -> int:
    games: dict[int, GameRecord] = {}
    try:
        return play(conn, name, games)
    except ProtocolFailure:
        unrevealed(games)
        if any(record.failed for record in games.values()):
            return 3  # a failed deal check outweighs the lost connection
        raise


def resume(conn: Connection, seat: Seat) -> None:
    """Connect again and take the seat back: hello with the token, the welcome checked, answers sent again."""
    delay = 0.25
    for _ in range(RESUME_TRIES):
        time.sleep(delay)
        delay = min(delay * 2, 5.0)
        try:
            conn.sock.close()
            fresh = Connection(*conn.address, conn.tls)
        except OSError:
            continue
        conn.sock, conn.certificate_key = fresh.sock, fresh.certificate_key
        conn.send({"type": "hello", "versions": [VERSION], "name": seat.name, "nonce": os.urandom(32),
                   "token": seat.welcome["token"], "received": seat.received})
        try:
            welcome = conn.receive()
        except ConnectionLost:
            continue
        if welcome["type"] == "error":
            raise ProtocolFailure(f"the resume was refused: {welcome['code']}: {welcome['message']}")
        first = seat.welcome
        same = all(welcome.get(k) == first[k] for k in ("seat", "match", "host_key", "token"))
        expect(welcome["type"] == "welcome" and same and welcome["sent"] >= seat.received,
               "the welcome of the resume does not continue this match (bad_resume)")
        expect(conn.certificate_key in (None, welcome["host_key"]), "the welcome's host key is not the TLS certificate's key")
        seat.sent_at_welcome = welcome["sent"]
        for answer in (seat.unconfirmed_seed, seat.unconfirmed_play):  # rule 6
            if answer is not None:
                conn.send(answer)
        return
    raise ProtocolFailure("the connection broke and the seat could not be resumed")


def play(conn: Connection, name: str, games: dict[int, GameRecord]) -> int:
    seat = Seat(name)
    conn.send({"type": "hello", "versions": [VERSION], "name": name, "nonce": seat.nonce})
    welcome = conn.receive()
    if welcome["type"] == "error":
        raise ProtocolFailure(f"refused: {welcome['code']}: {welcome['message']}")
    expect(welcome["type"] == "welcome", f"{welcome['type']} instead of welcome")
    if welcome["version"] != VERSION:  # not a version we offered (5.2)
        conn.send({"type": "error", "code": "unsupported_version", "message": "this client speaks version 1"})
        raise ProtocolFailure(f"the host chose version {welcome['version']}")
    expect(welcome["seat"] == 1, "this client plays seat 1 only")
    seat.welcome = welcome
    match_id, host_key = welcome["match"], welcome["host_key"]
    expect(conn.certificate_key in (None, host_key), "the welcome's host key is not the TLS certificate's key")
    current: GameRecord | None = None

    while True:
        try:
            message = conn.receive()
        except ConnectionLost:
            resume(conn, seat)
            continue
        kind = message["type"]
        if kind in STREAM:
            seat.received += 1
        if kind == "commit":
            game = message["game"]
            if game in games:
                if message["commitment"] == games[game].commit["commitment"]:
                    continue  # answered on an earlier connection; a resume sent the seed again if needed
                # A new commitment for a deal this seat's seed has fixed: never answered (5.8, rule 11).
                print(f"game {game}: NOT VERIFIED: the host committed again to a deal already fixed", flush=True)
                conn.send({"type": "error", "code": "unexpected", "message": "a second commitment for a fixed deal"})
                return 3
            expect(game == len(games) + 1, f"a commitment for game {game} out of order")
            if not signature_ok(host_key, message["signature"], b"basra-net/v1/commit-sig", match_id, game,
                                message["commitment"]):
                print(f"game {game}: the host's commitment does not verify; leaving", flush=True)
                conn.send({"type": "leave", "reason": "the commitment signature does not verify"})
                return 3
            seed = os.urandom(32)
            games[game] = current = GameRecord(message, seed)
            seat.unconfirmed_seed = {"type": "seed", "game": game, "seed": seed}
            conn.send(seat.unconfirmed_seed)
        elif kind == "deal":
            expect(current is not None and message["game"] == len(games), "a deal without a seed exchange")
            current.dealer, current.hand_no = message["dealer"], message["hand_no"]
            current.my_hands[message["hand_no"]] = message["hand"]
            if message["hand_no"] == 1:
                current.first_table, current.moved = message["table"], message["moved"]
                seat.unconfirmed_seed = None
        elif kind == "your_turn":
            # Rule 7: a your_turn replayed before the replay's last message was answered already.
            if seat.received < seat.sent_at_welcome:
                continue
            seat.open_request = message["request"]
            if seat.unconfirmed_play is not None and seat.unconfirmed_play["request"] == message["request"]:
                continue  # answered before the break, and sent again after the welcome
            move = random.choice(message["moves"])
            seat.unconfirmed_play = {"type": "play", "request": message["request"], "card": move["card"],
                                     "captures": move["captures"]}
            conn.send(seat.unconfirmed_play)
        elif kind == "played":
            if message["seat"] == 1:
                seat.unconfirmed_play = None
            if message["seat"] == 0 and current is not None:
                current.seat0_plays.append((current.hand_no, message["card"]))
        elif kind == "reveal":
            game = message["game"]
            expect(game in games and not games[game].revealed, f"a reveal of game {game} out of order")
            games[game].revealed = True
            problems = check_game(game, games[game], message, match_id, host_key, seat.nonce)
            if problems:
                games[game].failed = True
                print(f"game {game}: DEAL CHECK FAILED: " + "; ".join(problems), flush=True)
            else:
                print(f"game {game}: deal verified", flush=True)
        elif kind == "match_end":
            failed = unrevealed(games) or any(record.failed for record in games.values())
            winner = "nobody" if message["winner"] is None else f"seat {message['winner']}"
            print(f"match over ({message['reason']}): {winner} wins "
                  f"{message['totals'][0]}-{message['totals'][1]}", flush=True)
            conn.send({"type": "leave", "reason": "the match is over"})  # the end was read (7.3)
            return 3 if failed else 0
        elif kind == "ping":
            conn.send({"type": "pong", "id": message["id"]})  # answered while waiting for anything (5.7)
        elif kind == "error":
            print(f"the host refused a message: {message['code']}: {message['message']}", file=sys.stderr)
            if message["code"] in FATAL:
                raise ProtocolFailure(f"fatal error from the host: {message['code']}")
        elif kind == "leave":
            raise ProtocolFailure(f"the host left the match: {message['reason']}")
        # match_start, game_end, pong, away, back: nothing to do in a headless client


def main(argv: list[str]) -> int:
    tls = "--plain" not in argv
    argv = [arg for arg in argv if arg != "--plain"]
    if len(argv) not in (3, 4) or not argv[2].isdigit():
        print("usage: minimal_client.py [--plain] HOST PORT [NAME]", file=sys.stderr)
        return 2
    name = argv[3] if len(argv) == 4 else "Minimal"
    try:
        conn = Connection(argv[1], int(argv[2]), tls)
        try:
            return play_match(conn, name)
        finally:
            conn.sock.close()
    except (ProtocolFailure, KeyError, TypeError, OSError) as err:
        print(f"minimal_client: {err.__class__.__name__}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
