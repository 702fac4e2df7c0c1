"""The committed version-2 vectors are up to date, and the reference code reproduces every byte of them."""

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import msgpack

from basra_net.protocol import record
from basra_net.protocol.deal_signing import BadStepSignature, StepContext, StepLedger, seen_hash, step_body
from basra_net.protocol.messages import Audit, Audited, Lock, Locked, Open, Opened, from_wire
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.pake import GuestCodeExchange, HostCodeExchange
from basra_net.protocol.shuffle import verify_signature

VECTORS_DIR = Path(__file__).parents[1] / "vectors"
VECTORS = json.loads((VECTORS_DIR / "signed_records.json").read_text())


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_signed_records", VECTORS_DIR / "generate_signed_records.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_example_sessions() -> list[dict]:
    return json.loads((VECTORS_DIR / "example_session.json").read_text())["sessions"]


def h(value: str) -> bytes:
    return bytes.fromhex(value)


KEYS = VECTORS["keys"]
SEEDS = {entry["game"]: h(entry["seed"]) for entry in VECTORS["client_seeds"]}
CONTEXT = record.ChannelContext(
    h(VECTORS["context"]["match_id"]), h(KEYS["host_key"]), h(KEYS["guest_key"]),
    VECTORS["context"]["guest_seat"], h(VECTORS["context"]["guest_nonce"]), VECTORS["context"]["scoring"], VECTORS["context"]["target"],
)


def test_file_matches_generator():
    assert load_generator().build_vectors() == VECTORS


def test_the_context_bytes():
    assert CONTEXT.encode() == h(VECTORS["context"]["bytes"]) and len(CONTEXT.encode()) == 139 + len(CONTEXT.scoring) == 147


def test_the_running_hash_and_every_statement_of_a_whole_game():
    result = VECTORS["result_statement"]
    channel = record.ChannelRecord(CONTEXT)
    assert channel.chain.digest == h(VECTORS["stream"]["h0"])
    games = {g["checkpoint"]: g for g in VECTORS["game_statements"]}
    host = Ed25519PrivateKey.from_private_bytes(h(KEYS["host_private_seed"]))
    guest = Ed25519PrivateKey.from_private_bytes(h(KEYS["guest_private_seed"]))
    for step in VECTORS["stream"]["steps"]:
        message = channel.host_frame(h(step["frame"]))
        if message["type"] == "commit":  # the guest answers the commitment with its seed
            channel.guest_seed(message["game"], SEEDS[message["game"]])
        assert channel.chain.count == step["n"] and channel.chain.digest == h(step["hash"]), f"stream message {step['n']}"
        owed = channel.owed_by_host
        if owed is None:
            continue
        expected = games[step["n"]] if owed[0] == "game" else result
        for signer, role, key in ((record.HOST_SIGNER, "host", host), (record.GUEST_SIGNER, "guest", guest)):
            assert channel.owed_statement(signer) == h(expected[role]["bytes"])
            assert verify_signature(CONTEXT.key_of(signer), h(expected[role]["signature"]), h(expected[role]["bytes"]))
        # the host's sig, as the reference code encodes it, is the next frame of the vector
        following = VECTORS["stream"]["steps"][step["n"]]
        assert encode_frame(channel.host_signature(host)) == h(following["frame"])
    channel.finish()
    assert channel.result.result.end_hash == h(result["end_hash"])
    assert [g.host for g in channel.games] == [record.Status.VALID]


@pytest.mark.parametrize("name", ["absence_statement", "withheld_statement", "bad_deal_statement"])
def test_the_absence_statement(name):
    vector = VECTORS[name]
    account = record.AbsenceAccount(
        vector["absent_seat"], vector["grace"], tuple(record.AbsenceEvent(*event) for event in vector["events"])
    )
    statement = record.absence_statement(CONTEXT, account)
    assert statement == h(vector["bytes"])
    assert verify_signature(CONTEXT.host_key, h(vector["signature"]), statement)


def test_each_party_signs_its_steps_of_the_hidden_deal():
    """The reference code builds every step statement of the vectors, and its ledger checks each signature in turn."""
    vector = VECTORS["step_statements"]
    frames = [f for s in load_example_sessions() if s["inputs"].get("deals") for f in s["frames"]]
    steps = [from_wire(msgpack.unpackb(h(f["hex"])[4:], raw=False)) for f in frames]
    steps = [m for m in steps if isinstance(m, (Lock, Open, Audit, Locked, Opened, Audited)) and m.game == 1][: len(vector["steps"])]
    context = StepContext(h(vector["match_id"]), tuple(h(k) for k in vector["keys"]))
    assert context.encode() == h(vector["context"])
    ledger = StepLedger(context, 1)
    for step, expected in zip(steps, vector["steps"], strict=True):
        seat = expected["seat"]
        assert step_body(step) == h(expected["body"])
        assert seen_hash(ledger.signatures[1 - seat][: step.seen]) == h(expected["seen_hash"])
        assert ledger.statement(seat, step) == h(expected["bytes"]) and step.sig == h(expected["signature"])
        ledger.take(seat, step)
        assert not ledger.verifies(seat, replace(step, seen=step.seen + 1))  # over steps it had not received: refused
    with pytest.raises(BadStepSignature):
        ledger.take(0, replace(steps[0], sig=bytes(64)))


def test_the_code_exchange_with_fixed_randomness():
    vector = VECTORS["pake"]
    entropy = load_generator().fixed_entropy
    guest = GuestCodeExchange(
        vector["code"], guest_key=CONTEXT.guest_key, guest_nonce=CONTEXT.guest_nonce, host_key=CONTEXT.host_key,
        entropy=entropy(vector["guest_entropy_label"].encode()),
    )
    host = HostCodeExchange(vector["code"], host_key=CONTEXT.host_key, entropy=entropy(vector["host_entropy_label"].encode()))
    message_a = guest.start()
    assert message_a == h(vector["message_a"])
    message_b, confirm_b = host.answer(message_a, guest_key=CONTEXT.guest_key, guest_nonce=CONTEXT.guest_nonce)
    assert (message_b, confirm_b) == (h(vector["message_b"]), h(vector["confirm_b"]))
    confirm_a = guest.answer(message_b, confirm_b)
    assert confirm_a == h(vector["confirm_a"]) and guest.key == h(vector["key"])
    host.check(confirm_a)


def test_section_14_states_the_sizes_and_points_the_code_uses():
    from spake2.parameters.ed25519 import ParamsEd25519

    doc = (Path(__file__).parents[2] / "PROTOCOL.md").read_text(encoding="utf-8")
    section = doc[doc.index("## 14. Signed records"):]
    for name, point in (("M", ParamsEd25519.M), ("N", ParamsEd25519.N)):
        assert f"    {name} = {point.to_bytes().hex()}" in section
    assert "ctx is 139 bytes and the scoring's length: 147 bytes with `egyptian`" in section
    assert CONTEXT.scoring == "egyptian" and len(CONTEXT.encode()) == 147
    without_deal = replace(CONTEXT, guest_seat=0)
    assert "That is 102 bytes and ctx with the fair deal and 70 and ctx without (249 and 217 with `egyptian`)" in section
    assert len(record.game_statement(CONTEXT, 0, 1, 83, bytes(32), bytes(32))) == 249
    assert len(record.game_statement(without_deal, 0, 1, 83, bytes(32), None)) == 217
