"""What version 2's signed records and code exchange cost, measured on the real stream of a whole game.

The stream is the host's stream of session 12.1 (tests/vectors/signed_records.json,
86 frames of one game with the host's signatures).  Printed, each the median of
--repeat runs:

- hashing: the running hash over the game's frames, per frame and per game;
- one game's statement signed by the host and countersigned by the guest,
  and both signatures verified (what each side does at each checkpoint);
- a whole channel checked as a verifier does (check_channel: decode, hash,
  verify both signatures of the game and of the result);
- one code exchange: the client's start and answer, the host's answer and
  check, in pure Python (the spake2 package).

Run: python benchmarks/signed_records.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.protocol import record
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.pake import GuestCodeExchange, HostCodeExchange
from basra_net.protocol.shuffle import verify_signature

VECTORS = json.loads((Path(__file__).parents[1] / "tests" / "vectors" / "signed_records.json").read_text())


def median_seconds(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    repeat = parser.parse_args().repeat
    keys, ctx = VECTORS["keys"], VECTORS["context"]
    host = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(keys["host_private_seed"]))
    guest = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(keys["guest_private_seed"]))
    context = record.ChannelContext(
        bytes.fromhex(ctx["match_id"]), bytes.fromhex(keys["host_key"]), bytes.fromhex(keys["guest_key"]),
        ctx["guest_seat"], bytes.fromhex(ctx["guest_nonce"]), ctx["scoring"], ctx["target"],
    )
    frames = [bytes.fromhex(step["frame"]) for step in VECTORS["stream"]["steps"]]

    def hash_game() -> None:
        chain = record.RunningHash(context)
        for frame in frames:
            chain.add(frame)

    statement = bytes.fromhex(VECTORS["game_statements"][0]["host"]["bytes"])
    countersigned = bytes.fromhex(VECTORS["game_statements"][0]["guest"]["bytes"])

    def sign_and_check() -> None:
        host_signature, guest_signature = host.sign(statement), guest.sign(countersigned)
        assert verify_signature(context.host_key, host_signature, statement)
        assert verify_signature(context.guest_key, guest_signature, countersigned)

    # The channel as a verifier reads it: the guest's seed, the host's stream, the guest's countersignatures.
    seed = {"type": "seed", "game": 1, "seed": bytes.fromhex(VECTORS["client_seeds"][0]["seed"])}
    records = []
    guest_side = record.ChannelRecord(context)
    for frame in frames:
        message = guest_side.host_frame(frame)
        records.append(("host", frame[4:]))
        if message["type"] == "commit":
            guest_side.guest_seed(1, seed["seed"])
            records.append(("guest", encode_frame(seed)[4:]))
        if message["type"] == "sig":
            records.append(("guest", encode_frame(guest_side.countersignature(guest))[4:]))

    def check_whole_channel() -> None:
        record.check_channel(context, records)

    def code_exchange() -> None:
        nonce = bytes.fromhex(ctx["guest_nonce"])
        client = GuestCodeExchange("K7M-2QX", guest_key=context.guest_key, guest_nonce=nonce, host_key=context.host_key)
        server = HostCodeExchange("K7M-2QX", host_key=context.host_key)
        message_b, confirm_b = server.answer(client.start(), guest_key=context.guest_key, guest_nonce=nonce)
        server.check(client.answer(message_b, confirm_b))

    hashing = median_seconds(hash_game, repeat)
    print(f"running hash: {hashing / len(frames) * 1e6:.1f} us per frame, {hashing * 1e3:.2f} ms per game of {len(frames)} frames")
    print(f"one checkpoint, signed by both and both signatures verified: {median_seconds(sign_and_check, repeat) * 1e3:.2f} ms")
    print(f"a whole one-game channel checked (decode, hash, 4 signatures): {median_seconds(check_whole_channel, repeat) * 1e3:.2f} ms")
    print(f"one code exchange, both sides (pure-Python SPAKE2): {median_seconds(code_exchange, max(5, repeat // 10)) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
