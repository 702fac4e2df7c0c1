"""Writes signed_records.json: test vectors for version 2's signed records and code exchange (PROTOCOL.md section 14).

The channel context, the running hash and every signed statement are built
here from the specification with hashlib, hmac and struct alone,
independently of basra_net.protocol.record, so that the vectors check that
module rather than echo it.  Ed25519 comes from `cryptography`; the SPAKE2
run comes from the `spake2` package (the group arithmetic is its own), with
the fixed entropy function of section 14.12, and its key confirmations are
computed here.

The stream is the host's stream of session 12.1 (example_session.json: one
whole game), with the host's signatures built here where version 2 puts them
(and checked against the ones the session's host sent).

Run from anywhere: python tests/vectors/generate_signed_records.py
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from pathlib import Path

import msgpack
import spake2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

VECTORS_PATH = Path(__file__).with_name("signed_records.json")
SESSION_PATH = Path(__file__).with_name("example_session.json")

# RFC 8032 section 7.1, TEST 1 (the host, as in section 9.11) and TEST 2 (the guest).
HOST_PRIVATE_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
GUEST_PRIVATE_SEED = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")

STREAM_TYPES = {"match_start", "commit", "deal", "your_turn", "played", "game_end", "reveal", "sig", "match_end"}
ABSENCE_KINDS = {"away": 1, "resume": 2, "back": 3, "grace_over": 4, "left": 5, "unsigned": 6, "withheld": 7, "restart": 8, "bad_deal": 9}
ABSENCE = {
    "absent_seat": 1,
    "grace": 120,
    "events": [["away", 1767225600000, 40], ["resume", 1767225630000, 40], ["grace_over", 1767225720000, 41]],
}
# A party of the hidden deal that stayed connected and did not send a step it owed (15.15).
WITHHELD = {"absent_seat": 0, "grace": 120, "events": [["withheld", 1767225660000, 57]]}
# A party of the hidden deal whose step failed a check of 15.11, answered with the fatal error bad_deal (15.15).
BAD_DEAL = {"absent_seat": 1, "grace": 120, "events": [["bad_deal", 1767225690000, 23]]}
CODE = "K7M-2QX"
PAKE_GUEST_ENTROPY = b"basra-net/v2/pake-vector/guest"
PAKE_HOST_ENTROPY = b"basra-net/v2/pake-vector/host"

PROTOCOL = "basra-net protocol version 2; the signed records and the code exchange of PROTOCOL.md, section 14"
DESCRIPTION = (
    "test vectors for version 2: the channel context, the running hash of a whole game's stream step by step, "
    "every statement either player signs (game, result, absence) with its exact input bytes and both signatures, "
    "each party's signature of its own steps of the hidden deal (15.17), "
    "and a SPAKE2 run of the join code with fixed randomness"
)
CONVENTIONS = {
    "bytes": "lowercase hex strings; every field named bytes is exactly the input that is hashed or signed",
    "keys": "Ed25519 private seeds as RFC 8032 section 7.1 gives them (TEST 1 for the host, TEST 2 for the guest) and raw public keys",
    "notation": "u8, u16, u32, u64 and lp as PROTOCOL.md sections 9.1 and 14.1 define them",
}
_STATEMENT = {
    "bytes": "the exact input signed, hex",
    "signature": "the 64-byte Ed25519 signature of bytes, hex",
}
FIELDS = {
    "protocol": "the basra-net protocol version these vectors belong to, and where it is specified",
    "description": "what the file holds",
    "conventions": "how values are written",
    "fields": "this map: every field of the file by its path, [] standing for each element of an array",
    "keys": "both identity keys of the channel",
    "keys.host_private_seed": "the host's Ed25519 private seed, 32 bytes",
    "keys.host_key": "the host key (14.2), 32 bytes",
    "keys.guest_private_seed": "the guest's Ed25519 private seed, 32 bytes",
    "keys.guest_key": "the guest key (14.2), 32 bytes",
    "context": "the channel context (14.3)",
    "context.match_id": "16 bytes: the match id of welcome",
    "context.guest_seat": "the seat of the channel's player",
    "context.guest_nonce": "32 bytes: the nonce of the hello that took the seat",
    "context.scoring": "the scoring preset of welcome",
    "context.target": "the target score of welcome",
    "context.bytes": "ctx, the 131 + 4 + len(scoring) + 4 bytes every statement carries after its label",
    "stream": "the running hash of the host's stream to the guest (14.4): session 12.1 with the host's sig messages added",
    "stream.h0": "h_0, the hash before the first stream message",
    "stream.steps": "each stream message in the order the host sent it",
    "stream.steps[].n": "its stream number, from 1",
    "stream.steps[].type": "its message type",
    "stream.steps[].frame": "the whole frame as sent: the 4-byte length and the body, hex",
    "stream.steps[].hash": "h_n, the running hash after it",
    "client_seeds": "the guest's seed of each game, from its seed message (signed in game_signed, 14.5)",
    "client_seeds[].game": "the game",
    "client_seeds[].seed": "32 bytes: the seed",
    "game_statements": "for each game that reached its checkpoint, game_signed by each signer (14.5)",
    "game_statements[].game": "the game g",
    "game_statements[].checkpoint": "c_g, the stream number of the game's reveal",
    "game_statements[].hash": "h_(c_g), the running hash at the checkpoint",
    **{f"game_statements[].{role}": f"game_signed with signer {role}" for role in ("host", "guest")},
    **{f"game_statements[].{role}.{name}": text for role in ("host", "guest") for name, text in _STATEMENT.items()},
    "result_statement": "result_signed by each signer (14.6), with the fields it repeats from the stream",
    "result_statement.names": "name_0 and name_1, of match_start",
    "result_statement.totals": "total_0 and total_1, of match_end",
    "result_statement.winner": "the winner of match_end (nil: none, signed as ff)",
    "result_statement.reason": "the reason of match_end",
    "result_statement.end_count": "e, the stream number of match_end",
    "result_statement.end_hash": "h_e, the running hash after match_end",
    **{f"result_statement.{role}": f"result_signed with signer {role}" for role in ("host", "guest")},
    **{f"result_statement.{role}.{name}": text for role in ("host", "guest") for name, text in _STATEMENT.items()},
    "absence_statement": "the host's account of an absence (14.6), not from session 12.1",
    "absence_statement.absent_seat": "the seat that was away",
    "absence_statement.grace": "the grace period, seconds",
    "absence_statement.events": "each event as [kind, time in ms since 1970, stream messages sent], in order",
    **{f"absence_statement.{name}": text for name, text in _STATEMENT.items()},
    "withheld_statement": "the host's account of a step of the hidden deal withheld (14.6, 15.15), not from session 12.1",
    "withheld_statement.absent_seat": "the seat that withheld the step",
    "withheld_statement.grace": "the grace period, seconds",
    "withheld_statement.events": "its one event, [kind, time in ms since 1970, stream messages sent]",
    **{f"withheld_statement.{name}": text for name, text in _STATEMENT.items()},
    "bad_deal_statement": "the host's account of a step of the hidden deal that failed its check (14.6, 15.15), not from session 12.1",
    "bad_deal_statement.absent_seat": "the seat whose step failed",
    "bad_deal_statement.grace": "the grace period, seconds",
    "bad_deal_statement.events": "its one event, [kind, time in ms since 1970, stream messages sent]",
    **{f"bad_deal_statement.{name}": text for name, text in _STATEMENT.items()},
    "step_statements": "the first steps of game 1 of the hidden-hands session of example_session.json, each signed by its party (15.17)",
    "step_statements.match_id": "16 bytes: the match id",
    "step_statements.keys": "each seat's identity key as match_start names them, seat 0's first (seat 0 is the host's own player)",
    "step_statements.seat_0_private_seed": "seat 0's Ed25519 private seed, 32 bytes",
    "step_statements.context": "u16(2) || lp(match_id) || lp(key_0) || lp(key_1), the bytes every step statement carries after its label",
    "step_statements.steps": "each step in the order the guest's channel holds it: its own as sent, seat 0's as relayed",
    "step_statements.steps[].type": "the message that carries it",
    "step_statements.steps[].seat": "the party whose step it is",
    "step_statements.steps[].game": "the game",
    "step_statements.steps[].seen": "how many steps of the other party its party had received",
    "step_statements.steps[].seen_hash": "the chain over the signatures of those steps",
    "step_statements.steps[].body": "the step's content, hex",
    **{f"step_statements.steps[].{name}": text for name, text in _STATEMENT.items()},
    "pake": "one code exchange (14.9) with the entropy functions of 14.12",
    "pake.code": "the join code as the host shows it",
    "pake.password": "pw: the code without spaces and dashes, upper case",
    "pake.guest_entropy_label": "S for the client's entropy function",
    "pake.host_entropy_label": "S for the host's entropy function",
    "pake.id_a": "idA, hex",
    "pake.id_b": "idB, hex",
    "pake.message_a": "msg_A, the hello's pake: 41 and enc(X*)",
    "pake.message_b": "msg_B, the pake message's pake: 42 and enc(Y*)",
    "pake.key": "k, the shared key both sides derive",
    "pake.confirm_b": "confirm_B, the host's key confirmation",
    "pake.confirm_a": "confirm_A, the client's key confirmation",
}


def u8(value: int) -> bytes:
    return struct.pack(">B", value)


def u16(value: int) -> bytes:
    return struct.pack(">H", value)


def u32(value: int) -> bytes:
    return struct.pack(">I", value)


def u64(value: int) -> bytes:
    return struct.pack(">Q", value)


def lp(data: bytes) -> bytes:
    return u32(len(data)) + data


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def public(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def frame(message: dict) -> bytes:
    body = msgpack.packb(message, use_bin_type=True)
    return u32(len(body)) + body


def fixed_entropy(label: bytes):
    """entropy_S(n): the first n bytes of SHA-256(S || u32(0)) || SHA-256(S || u32(1)) || ... (14.12)."""

    def entropy(count: int) -> bytes:
        blocks = b"".join(sha256(label + u32(i)) for i in range((count + 31) // 32))
        return blocks[:count]

    return entropy


def build_vectors() -> dict:
    host, guest = Ed25519PrivateKey.from_private_bytes(HOST_PRIVATE_SEED), Ed25519PrivateKey.from_private_bytes(GUEST_PRIVATE_SEED)
    host_key, guest_key = public(host), public(guest)
    session = json.loads(SESSION_PATH.read_text())["sessions"][0]
    inputs = session["inputs"]
    match_id, nonce = bytes.fromhex(inputs["match_id"]), bytes.fromhex(inputs["client_nonce"])
    guest_seat = 1
    scoring, target = inputs["scoring"], inputs["target"]
    ctx = u16(2) + lp(match_id) + lp(host_key) + lp(guest_key) + u8(guest_seat) + lp(nonce) + lp(scoring.encode()) + u32(target)
    signers = {"host": (0, host), "guest": (1, guest)}

    frames = [(f["from"], bytes.fromhex(f["hex"])) for f in session["frames"]]
    seeds = {}
    h = h0 = sha256(lp(b"basra-net/v2/stream") + ctx)
    steps, games, links = [], [], []
    names = end = None

    def take(raw: bytes) -> dict:
        nonlocal h
        n = len(steps) + 1
        h = sha256(lp(b"basra-net/v2/stream-step") + h + u32(n) + lp(raw))
        message = msgpack.unpackb(raw[4:], raw=False)
        steps.append({"n": n, "type": message["type"], "frame": raw.hex(), "hash": h.hex()})
        return message

    for sender, raw in frames:
        message = msgpack.unpackb(raw[4:], raw=False)
        if sender == "guest" and message["type"] == "seed":
            seeds.setdefault(message["game"], message["seed"])
        if sender != "host" or message["type"] not in STREAM_TYPES:
            continue
        if message["type"] == "sig":
            # The session's own host signature: the one built here from the specification must be the same frame.
            assert raw.hex() == steps[-1]["frame"], "the example session's host sig differs from the specification's"
            continue
        take(raw)
        if message["type"] == "match_start":
            names = message["names"]
        if message["type"] == "reveal":  # the checkpoint on seat 1's channel
            game, checkpoint, at = message["game"], len(steps), h
            statements = {}
            for role, (signer, key) in signers.items():
                signed = lp(b"basra-net/v2/game") + ctx + u8(signer) + u32(game) + u32(checkpoint) + lp(at) + lp(seeds[game])
                statements[role] = {"bytes": signed.hex(), "signature": key.sign(signed).hex()}
            games.append({"game": game, "checkpoint": checkpoint, "hash": at.hex(), **statements})
            links.append(u32(game) + u32(checkpoint) + lp(at))
            take(frame({"type": "sig", "of": "game", "game": game, "count": checkpoint, "signature": bytes.fromhex(statements["host"]["signature"])}))
        if message["type"] == "match_end":
            end = message
            end_count, end_hash = len(steps), h
            result = {
                "names": names, "totals": end["totals"],
                "winner": end["winner"], "reason": end["reason"], "end_count": end_count, "end_hash": end_hash.hex(),
            }
            for role, (signer, key) in signers.items():
                signed = (
                    lp(b"basra-net/v2/result") + ctx + u8(signer)
                    + lp(names[0].encode()) + lp(names[1].encode())
                    + u32(end["totals"][0]) + u32(end["totals"][1]) + u8(0xFF if end["winner"] is None else end["winner"])
                    + lp(end["reason"].encode()) + u32(len(links)) + b"".join(links) + u32(end_count) + lp(end_hash)
                )
                result[role] = {"bytes": signed.hex(), "signature": key.sign(signed).hex()}
            take(frame({"type": "sig", "of": "result", "game": 0, "count": end_count, "signature": bytes.fromhex(result["host"]["signature"])}))

    def absence_signed(account: dict) -> bytes:
        return (
            lp(b"basra-net/v2/absence") + ctx + u8(0) + u8(account["absent_seat"]) + u32(account["grace"]) + u32(len(account["events"]))
            + b"".join(u8(ABSENCE_KINDS[kind]) + u64(time) + u32(sent) for kind, time, sent in account["events"])
        )

    absence, withheld, bad_deal = absence_signed(ABSENCE), absence_signed(WITHHELD), absence_signed(BAD_DEAL)

    return {
        "protocol": PROTOCOL,
        "description": DESCRIPTION,
        "conventions": CONVENTIONS,
        "fields": FIELDS,
        "keys": {
            "host_private_seed": HOST_PRIVATE_SEED.hex(), "host_key": host_key.hex(),
            "guest_private_seed": GUEST_PRIVATE_SEED.hex(), "guest_key": guest_key.hex(),
        },
        "context": {
            "match_id": match_id.hex(), "guest_seat": guest_seat, "guest_nonce": nonce.hex(),
            "scoring": scoring, "target": target, "bytes": ctx.hex(),
        },
        "stream": {"h0": h0.hex(), "steps": steps},
        "client_seeds": [{"game": game, "seed": seed.hex()} for game, seed in seeds.items()],
        "game_statements": games,
        "result_statement": result,
        "absence_statement": {**ABSENCE, "bytes": absence.hex(), "signature": host.sign(absence).hex()},
        "withheld_statement": {**WITHHELD, "bytes": withheld.hex(), "signature": host.sign(withheld).hex()},
        "bad_deal_statement": {**BAD_DEAL, "bytes": bad_deal.hex(), "signature": host.sign(bad_deal).hex()},
        "step_statements": step_run(),
        "pake": pake_run(host_key, guest_key, nonce),
    }


# The host's own seat of the hidden-hands session (example_session.json): its identity, counting from c0.
SEAT_0_PRIVATE_SEED = bytes(range(0xC0, 0xE0))
STEP_VECTORS = 8  # the first steps of game 1: both locks, the unmaskings and reveals of hand 1


def step_body(message: dict) -> bytes:
    """A step's content as 15.17 lays it out, from the party's message or the host's relay of it."""
    kind = message["type"].removesuffix("ed")
    if kind == "lock":
        return lp(b"lock") + message["public"] + b"".join(message["deck"])
    if kind == "open":
        return lp(b"open") + b"".join(
            u8(len(message[name])) + b"".join(u8(position) + data for position, data in message[name]) for name in ("unmaskings", "reveals")
        )
    return lp(b"audit") + message["scalar"]


def step_run() -> dict:
    session = next(s for s in json.loads(SESSION_PATH.read_text())["sessions"] if s["inputs"].get("deals"))
    match_id, guest_seat = bytes.fromhex(session["inputs"]["match_id"]), 1
    privates = {0: Ed25519PrivateKey.from_private_bytes(SEAT_0_PRIVATE_SEED), guest_seat: Ed25519PrivateKey.from_private_bytes(GUEST_PRIVATE_SEED)}
    keys = context = None
    signatures: dict[int, list[bytes]] = {0: [], 1: []}
    steps = []
    for f in session["frames"]:
        message = msgpack.unpackb(bytes.fromhex(f["hex"])[4:], raw=False)
        if message["type"] == "match_start":
            keys = message["keys"]
            assert [public(privates[0]), public(privates[1])] == keys
            context = u16(2) + lp(match_id) + lp(keys[0]) + lp(keys[1])
        if message["type"] in ("lock", "open", "audit") and f["from"] == "guest":
            seat = guest_seat
        elif message["type"] in ("locked", "opened", "audited") and f["from"] == "host":
            seat = message["seat"]
        else:
            continue
        if message["game"] != 1 or len(steps) == STEP_VECTORS:
            continue
        seen_hash = sha256(lp(b"basra-net/v2/step-seen"))
        for signature in signatures[1 - seat][: message["seen"]]:
            seen_hash = sha256(lp(b"basra-net/v2/step-seen") + seen_hash + signature)
        body = step_body(message)
        signed = lp(b"basra-net/v2/step") + context + u8(seat) + u32(message["game"]) + u32(message["seen"]) + lp(seen_hash) + lp(body)
        signature = privates[seat].sign(signed)
        assert signature == message["sig"], "the session's step signature differs from the specification's"
        signatures[seat].append(signature)
        steps.append({
            "type": message["type"], "seat": seat, "game": message["game"], "seen": message["seen"], "seen_hash": seen_hash.hex(),
            "body": body.hex(), "bytes": signed.hex(), "signature": signature.hex(),
        })
    return {
        "match_id": match_id.hex(), "keys": [k.hex() for k in keys], "seat_0_private_seed": SEAT_0_PRIVATE_SEED.hex(),
        "context": context.hex(), "steps": steps,
    }


def pake_run(host_key: bytes, guest_key: bytes, nonce: bytes) -> dict:
    password = CODE.replace("-", "").upper().encode("ascii")
    id_a = lp(b"basra-net/v2/pake/guest") + lp(guest_key) + lp(nonce)
    id_b = lp(b"basra-net/v2/pake/host") + u16(2) + lp(host_key)
    side_a = spake2.SPAKE2_A(password, idA=id_a, idB=id_b, entropy_f=fixed_entropy(PAKE_GUEST_ENTROPY))
    side_b = spake2.SPAKE2_B(password, idA=id_a, idB=id_b, entropy_f=fixed_entropy(PAKE_HOST_ENTROPY))
    message_a, message_b = side_a.start(), side_b.start()
    key_a, key_b = side_a.finish(message_b), side_b.finish(message_a)
    assert key_a == key_b
    transcript = lp(message_a) + lp(message_b)
    return {
        "code": CODE,
        "password": password.decode(),
        "guest_entropy_label": PAKE_GUEST_ENTROPY.decode(),
        "host_entropy_label": PAKE_HOST_ENTROPY.decode(),
        "id_a": id_a.hex(),
        "id_b": id_b.hex(),
        "message_a": message_a.hex(),
        "message_b": message_b.hex(),
        "key": key_a.hex(),
        "confirm_b": hmac.digest(key_a, lp(b"basra-net/v2/pake/host-confirm") + transcript, "sha256").hex(),
        "confirm_a": hmac.digest(key_a, lp(b"basra-net/v2/pake/guest-confirm") + transcript, "sha256").hex(),
    }


def main() -> None:
    VECTORS_PATH.write_text(json.dumps(build_vectors(), indent=2) + "\n")


if __name__ == "__main__":
    main()
