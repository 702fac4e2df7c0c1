"""PROTOCOL.md cannot drift from the code.

Every hex example decodes and re-encodes to the same bytes; every message
type, error code, play kind and match-end reason is documented; the example
sessions obey the connection state machines of both sides; and the examples
are what the reference host produces today.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import unicodedata
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from basra_net.client.verify_file import verify_file
from basra_net.engine.events import Move
from basra_net.engine.scoring import GameScore
from basra_net.protocol import errors, messages
from basra_net.protocol.connection import SENT_AGAIN, ClientConnection, HostConnection, HostMatch
from basra_net.protocol.framing import FrameDecoder, decode_body, encode_frame
from basra_net.protocol.messages import Error, Hello, Message, Welcome, from_wire, to_wire
from basra_net.protocol.text import REFUSED_CATEGORIES, UNICODE_VERSION, is_name, is_printable

ROOT = Path(__file__).parents[2]
DOC = (ROOT / "PROTOCOL.md").read_text(encoding="utf-8")
# Section 12's frames, generated from the reference host into a companion file.
EXAMPLES_DOC = (ROOT / "PROTOCOL-EXAMPLES.md").read_text(encoding="utf-8")
VECTORS = ROOT / "tests" / "vectors"
EXAMPLE = json.loads((VECTORS / "example_session.json").read_text())

FRAME_LINE = re.compile(r"^\*\*Frame (\d+)\*\* · (guest|host) → (guest|host) · `(\w+)`", re.M)
HEX_BLOCK = re.compile(r"^```hex\n(.*?)^```", re.M | re.S)


# --- reading the document --------------------------------------------------------------------


def sections(level: str, text: str) -> dict[str, tuple[str, str]]:
    """Number -> (title, body) for the headings of one level ("##" or "###")."""
    pattern = re.compile(rf"^{level} (\d+(?:\.\d+)?)\.? (.+)$", re.M)
    found = list(pattern.finditer(text))
    result = {}
    for here, after in zip(found, found[1:] + [None]):
        body = text[here.end() : after.start() if after else len(text)]
        result[here.group(1)] = (here.group(2).strip(), body)
    return result


TOP = sections("##", DOC)


def section(number: str) -> str:
    return TOP[number][1]


@dataclass(frozen=True)
class DocFrame:
    session: str  # the subsection of section 12, e.g. "12.1"
    number: int
    sender: str
    type: str
    data: bytes


def doc_frames() -> list[DocFrame]:
    """Every hex block of the companion file, with the frame line before it, under its section 12 number."""
    frames = []
    for sub, (_, body) in sections("##", EXAMPLES_DOC).items():
        for block in HEX_BLOCK.finditer(body):
            heads = list(FRAME_LINE.finditer(body, 0, block.start()))
            assert heads, f"a hex block in {sub} has no frame line before it"
            head = heads[-1]
            data = bytes.fromhex("".join(block.group(1).split()))
            frames.append(DocFrame(sub, int(head.group(1)), head.group(2), head.group(4), data))
    return frames


FRAMES = doc_frames()
SESSIONS = sorted({f.session for f in FRAMES})


def decode_one(data: bytes) -> Message:
    decoder = FrameDecoder()
    decoder.feed(data)
    wire = decoder.next_message()
    assert wire is not None, "the hex is not one whole frame"
    assert decoder.buffered == 0, "bytes left after the frame"
    return from_wire(wire)


# --- the document's shape -------------------------------------------------------------------


def test_sections_are_numbered_consecutively_and_match_the_contents():
    numbers = list(TOP)
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)]
    contents = re.findall(r"^(\d+)\. \[(.+?)\]\(#([\w-]+)\)$", section_text_before_first_numbered(), re.M)
    assert [(n, title) for n, title, _ in contents] == [(n, title) for n, (title, _) in TOP.items()]
    for number, title, anchor in contents:
        assert anchor == github_anchor(f"{number}. {title}")


def section_text_before_first_numbered() -> str:
    return DOC[: DOC.index("## 1. ")]


def github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


@pytest.mark.parametrize("number", list(TOP))
def test_subsections_are_numbered_consecutively(number):
    subs = list(sections("###", section(number)))
    assert subs == [f"{number}.{n}" for n in range(1, len(subs) + 1)]


def test_rfc_2119_sentence_is_in_the_introduction():
    assert "RFC 2119" in section("1")


# --- the catalogue and the error table ------------------------------------------------------


def catalogue_entry(kind: str) -> str:
    for title, body in sections("###", section("6")).values():
        if title == f"`{kind}`":
            return body
    raise AssertionError(f"section 6 has no entry for {kind}")


def table_rows(text: str) -> dict[str, list[str]]:
    """First cell (without backticks) -> all cells, for every table row naming a `thing`."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.fullmatch(r"`[\w.]+`", cells[0]):
            rows[cells[0].strip("`")] = cells
    return rows


@pytest.mark.parametrize("cls", messages.MESSAGE_TYPES, ids=lambda c: c.TYPE)
def test_every_message_type_has_a_catalogue_entry(cls):
    entry = catalogue_entry(cls.TYPE)
    assert "→" in entry.split("\n\n")[1] or "Either way" in entry, "the entry must say the direction"
    assert cls.TYPE in table_rows(section("6")), f"{cls.TYPE} is missing from the summary table"


def test_the_summary_table_is_the_message_catalogue():
    """Section 6.2 says of each message what basra_net.protocol.messages.CATALOGUE says, row by row."""
    rows = table_rows(sections("###", section("6"))["6.2"][1])
    yes = {True: "yes", False: "no"}
    for kind in messages.CATALOGUE:
        versions = ", ".join(map(str, sorted(kind.versions)))
        expected = [f"`{kind.type}`", kind.direction, kind.when, yes[kind.stream], yes[kind.recorded], versions, kind.section]
        assert rows.get(kind.type) == expected, f"6.2's row for {kind.type}"
        assert f"### {kind.section} `{kind.type}`" in DOC


@pytest.mark.parametrize("kind", messages.CATALOGUE, ids=lambda k: k.type)
def test_every_field_in_the_catalogue_is_documented(kind):
    documented = table_rows(catalogue_entry(kind.type))
    for wire_name, _, _ in kind.fields:
        assert wire_name in documented, f"{kind.type}.{wire_name} is not in section {kind.section}"


def test_every_field_of_the_examples_is_in_the_catalogue():
    for frame in FRAMES:
        decoder = FrameDecoder()
        decoder.feed(frame.data)
        wire = decoder.next_message()
        documented = table_rows(catalogue_entry(frame.type))
        for field in wire:
            assert field == "type" or field in documented, f"{frame.type}.{field} is not documented"


def test_move_map_score_map_play_kinds_and_reasons_are_documented():
    move_fields = table_rows(catalogue_entry("your_turn"))
    for name in ("card", "captures", "kind", *messages.PLAY_KINDS):
        assert name in move_fields
    score_fields = table_rows(catalogue_entry("game_end"))
    for field in fields(GameScore):
        assert field.name in score_fields
    reasons = table_rows(catalogue_entry("match_end"))
    for reason in messages.MATCH_END_REASONS:
        assert reason in reasons


def test_every_error_code_is_in_the_error_table_with_its_fatality():
    rows = table_rows(section("8"))
    assert set(rows) == set(errors.ERROR_CODES)
    for code, cells in rows.items():
        fatal = cells[-1]
        if code in errors.FATAL_CODES:
            assert fatal == "yes", code
        else:
            assert fatal.startswith("no"), code


# --- the hex examples --------------------------------------------------------------------------


def test_the_examples_cover_every_required_message():
    shown = {f.type for f in FRAMES}
    versions = {decode_one(f.data).version for f in FRAMES if f.type == "welcome"}
    # Session 12.5 deals hidden hands, the others by commit and reveal: between them, every message of both modes.
    assert shown >= {kind.type for kind in messages.CATALOGUE if versions & kind.versions}
    codes = {decode_one(f.data).code for f in FRAMES if f.type == "error"}
    assert errors.ILLEGAL_MOVE in codes


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: f"{f.session}-frame-{f.number}-{f.type}")
def test_hex_example_round_trips(frame):
    message = decode_one(frame.data)
    assert message.TYPE == frame.type
    assert encode_frame(to_wire(message)) == frame.data


def test_doc_frames_are_the_recorded_frames():
    recorded = {s["section"]: {f["n"]: f for f in s["frames"]} for s in EXAMPLE["sessions"]}
    assert set(recorded) == set(SESSIONS)
    for frame in FRAMES:
        entry = recorded[frame.session][frame.number]
        assert (entry["from"], entry["type"], bytes.fromhex(entry["hex"])) == (frame.sender, frame.type, frame.data)


# --- the examples obey section 7 ----------------------------------------------------------


def replay(frames: list[tuple[str, bytes]]) -> tuple[HostConnection, ClientConnection]:
    """Send each frame from its side's state machine and receive it on the other's.

    Each side must produce exactly the recorded bytes and the other must accept
    the message; either state machine raises on anything out of order.

    A second `hello` from the guest starts a new connection that resumes the
    seat (section 5.8): the client's state carries over, and the host's new
    connection takes over what the earlier one left open once its welcome is
    sent.  The answers the client sends again right after that welcome must be
    the ones its state machine says are unconfirmed, and the host may drop them
    as repeats.
    """
    host, client = HostConnection(), ClientConnection()
    earlier: HostConnection | None = None  # the host's end of the connection a resume replaces
    resent = b""  # what the client sends again after the resume's welcome, not yet seen
    for sender, data in frames:
        message = decode_one(data)
        if sender == "guest" and isinstance(message, Hello) and client.hello_sent:
            assert message.token is not None and client.welcome is not None, "a second hello resumes"
            client.begin_resume(message.token)
            earlier, host = host, HostConnection()
        if sender == "guest" and resent:
            assert resent.startswith(data), "after a resume's welcome, the client first sends again what is unconfirmed"
            resent = resent[len(data) :]
            host.receive_data(data)
            assert host.next_event() in (message, None)  # None: a repeat, dropped silently
            continue
        source, target = (host, client) if sender == "host" else (client, host)
        sent = source.send(message)
        assert sent == data
        target.receive_data(sent)
        assert target.next_event() == message
        assert target.next_event() is None
        if isinstance(message, Welcome) and earlier is not None:
            host.restore(earlier.match)
            earlier, resent = None, client.resend()
    assert not resent, "the client sent again less than it should"
    return host, client


@pytest.mark.parametrize("session", SESSIONS)
def test_doc_session_obeys_the_state_machines(session):
    frames = [(f.sender, f.data) for f in FRAMES if f.session == session]
    host, client = replay(frames)
    assert host.closed or client.closed, "every example session ends its connection"


@pytest.mark.parametrize("session", EXAMPLE["sessions"], ids=lambda s: s["name"])
def test_full_recorded_session_obeys_the_state_machines(session):
    frames = [(f["from"], bytes.fromhex(f["hex"])) for f in session["frames"]]
    assert [f["n"] for f in session["frames"]] == list(range(1, len(frames) + 1))
    host, client = replay(frames)
    last = decode_one(frames[-1][1])
    if last.TYPE == "match_end":
        assert client.closed
    elif last.TYPE == "leave":
        assert host.closed
    else:
        assert isinstance(last, Error) and last.code in errors.FATAL_CODES and client.closed


# --- the examples are what the code produces ----------------------------------------------


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "generate_example_session", VECTORS / "generate_example_session.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_examples_match_a_fresh_run_of_the_reference_host():
    generator = load_generator()
    sessions = generator.run_all()
    assert generator.build_json(sessions) == EXAMPLE
    assert generator.build_transcript(sessions[0]) == (VECTORS / "example_session.basra").read_bytes()
    assert generator.examples_doc(sessions) == EXAMPLES_DOC
    assert list(sections("##", EXAMPLES_DOC)) == list(sections("###", section("12")))


def test_example_transcript_verifies():
    said: list[str] = []
    assert verify_file(VECTORS / "example_session.basra", say=said.append) == 0, said
    assert "game 1: deal and plays check out; host signature valid, guest signature valid" in said
    assert said[-1].startswith("PROVEN: ") and said[-1].endswith("both players signed this record")


def test_the_dns_sd_txt_keys_are_those_section_16_lists():
    from basra_net.protocol.dnssd import SERVICE_TYPE, Announcement, txt_properties

    serve = Announcement("serve", "basra serve", "box", (1,), "3f2a 9c01 77be 04d1", False, True, 2, 0, ("hidden", "commit"))
    assert set(table_rows(section("16"))) == set(txt_properties(serve))
    assert f"`{SERVICE_TYPE.removesuffix('.local.')}`" in section("16")


# --- points a new implementation got wrong first, kept true --------------------------------------------


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_guest_records_the_hosts_errors_and_notes_a_verification_right_after_its_reveal():
    assert "every message it received from the host, `error` and `leave` included" in flat(section("11"))
    decoder = FrameDecoder()
    decoder.feed((VECTORS / "example_session.basra").read_bytes())
    frames = []
    while (frame := decoder.next_message()) is not None:
        if frame["type"] == "record":  # format 2 keeps the frame's body
            frame["message"] = decode_body(frame["body"])
        frames.append(frame)
    errors_recorded = [f["message"]["code"] for f in frames if f["type"] == "record" and f["message"]["type"] == "error"]
    assert errors_recorded == [errors.ILLEGAL_MOVE]
    notes = [(i, f) for i, f in enumerate(frames) if f["type"] == "note" and f["kind"] == "verification"]
    assert notes
    for i, note in notes:
        before = frames[i - 1]
        assert before["type"] == "record" and before["message"]["type"] == "reveal"
        assert before["message"]["game"] == note["game"]


FIRST_FRAMES = [
    ({"type": "hullo"}, errors.UNKNOWN_TYPE, 'a first frame `{"type": "hullo"}` is `unknown_type`'),
    ({"type": "play"}, errors.BAD_MESSAGE, 'a first frame `{"type": "play"}` without its fields is `bad_message`'),
    ({"type": "leave", "reason": "bye"}, errors.UNEXPECTED, "a well-formed first `leave` is `unexpected`"),
]


@pytest.mark.parametrize("wire, code, sentence", FIRST_FRAMES, ids=[c for _, c, _ in FIRST_FRAMES])
def test_a_first_frame_is_refused_by_the_first_layer_that_fails(wire, code, sentence):
    assert sentence in flat(section("5"))
    host = HostConnection()
    host.receive_data(encode_frame(wire))
    with pytest.raises(errors.ProtocolError) as refused:
        host.next_event()
    assert refused.value.code == code


def test_a_refused_play_then_a_cut_walks_through_as_section_5_8_says():
    """The example of 5.8, rule 7: the repeated refused play is dropped, and the open request is answered."""
    assert "*Example: a refused play, then a cut.*" in section("5")
    match_id, key, token = bytes(16), bytes(32), bytes(range(16))
    host, client = HostConnection(), ClientConnection()

    def host_says(message: Message) -> None:
        client.receive_data(host.send(message))
        assert client.next_event() == message

    def client_says(message: Message) -> Message | None:
        host.receive_data(client.send(message))
        return host.next_event()

    def raw_play(request: int) -> messages.Play:
        return messages.Play(request, 1 if request == 41 else 51, ())  # 41: the 2S, which no move lists

    client_says(Hello((1,), "Layla", bytes(32)))
    host_says(Welcome(1, 1, match_id, key, "egyptian", 101, token, 0))
    host_says(messages.MatchStart(("Sam", "Layla")))
    host.match.awaiting_seed = None
    client.match.seed_sent_for = client.match.commit_for = 1  # game 1's seed exchange is over
    host_says(messages.Deal(1, 1, 0, (51, 1, 2, 3), (17, 18, 19, 20), 40, (), 1))
    moves = (Move(51, (), "drop"),)
    host_says(messages.YourTurn(41, moves))
    assert client_says(raw_play(41)) == raw_play(41)  # the host takes it, then finds it illegal
    client.receive_data(host.send_error(errors.ProtocolError(errors.ILLEGAL_MOVE, "not a listed move")))
    assert client.next_event().code == errors.ILLEGAL_MOVE
    host_says(messages.YourTurn(42, moves))
    # The cut: a new connection resumes the seat, the host's end takes over what the old one left open.
    earlier, host = host, HostConnection()
    client.begin_resume(token)
    client_says(Hello((1,), "Layla", bytes(range(32)), token=token, received=client.received))
    host_says(Welcome(1, 1, match_id, key, "egyptian", 101, token, client.received))
    host.restore(HostMatch(open_request=earlier.match.open_request, answered_request=earlier.match.answered_request))
    host.receive_data(client.resend())  # step 2: play 41 again
    assert host.next_event() is None, "the repeated refused play is dropped silently"
    assert client.match.open_request == 42, "request 42 stays open through the cut"
    assert client_says(raw_play(42)) == raw_play(42)  # step 3


def test_what_a_resume_sends_again_is_what_section_5_8_rule_6_lists_in_its_order():
    rule = flat(section("5").split("6. **Answers sent again.**")[1].split("7. **Open requests.**")[0])
    bullets = rule.split(" - ")[1:]
    bullets[-1] = bullets[-1].split(". ")[0]  # the list ends where the prose about repeats begins
    # Each bullet names what is sent before it says when: "its last `seed`, if ...", "each `lock` ... (15.15) it sent".
    listed = [name for bullet in bullets for name in re.findall(r"`(\w+)`", re.split(r"\(| if | since ", bullet)[0])]
    assert listed == [kind.TYPE for kind in SENT_AGAIN]
    assert "drops silently, with no error and no effect, an exact repeat" in rule


def test_the_resume_checklist_is_in_2_6_alone_and_names_every_message_once_with_what_a_resume_does():
    rule = flat(section("5").split("14. **The checklist.**")[1].split("\n## ")[0])
    assert rule == "What each side keeps while a seat is held, and what a resume does with each message, is the checklist of Section 2.6."
    checklist = sections("###", section("2"))["2.6"][1]
    rows = [line.strip() for line in checklist.splitlines() if line.strip().startswith("| `")]
    seen: dict[str, tuple[str, str]] = {}
    for row in rows:
        names, host_cell, client_cell = (cell.strip() for cell in row.strip("|").split("|"))
        for name in re.findall(r"`(\w+)`", names):
            assert name not in seen, f"{name} has two rows"
            seen[name] = host_cell, client_cell
    kinds = {kind.message.TYPE: kind for kind in messages.CATALOGUE}
    assert set(seen) == set(kinds)
    again = {kind.TYPE for kind in SENT_AGAIN}
    for name, (host_cell, client_cell) in seen.items():
        kind = kinds[name]
        assert (host_cell == "—") == (messages.HOST not in kind.sent_by), name
        assert host_cell.startswith("replayed") == (messages.HOST in kind.sent_by and kind.stream), name
        assert (client_cell == "—") == (messages.CLIENT not in kind.sent_by), name
        assert client_cell.startswith("sent again") == (name in again), name


def test_printable_is_the_unicode_version_and_the_categories_section_6_1_names():
    text = flat(catalogue_part_6_1())
    version = re.search(r"Unicode Character Database version (\d+\.\d+\.\d+) or a later version", text).group(1)
    listed = re.search(r"is one of ((?:\w\w, )+\w\w and \w\w);", text).group(1)
    assert version == UNICODE_VERSION == unicodedata.unidata_version
    assert set(re.findall(r"\b[A-Z][a-z]\b", listed)) == REFUSED_CATEGORIES
    for refused in ("\x00", "\x7f", "\u00ad", "\u200b", "\u00a0", "\u3000", "\u2028", "\u2029", "\ue000", "\u0378", "\U000e0001"):
        assert not is_printable(f"a{refused}b"), f"U+{ord(refused):04X}"
    for allowed in ("Layla", "Sam & Co.", "é", "ليلى", "😀", "ß", "a\u0301"):
        assert is_printable(allowed) and is_name(allowed, 32), allowed
    assert not is_name(" Sam", 32) and not is_name("Sam ", 32) and not is_name("", 32)
    with pytest.raises(errors.ProtocolError) as refused:
        from_wire({"type": "hello", "versions": [1], "name": "Sa\u00adm", "nonce": bytes(32)})
    assert refused.value.code == errors.BAD_MESSAGE


def catalogue_part_6_1() -> str:
    return sections("###", section("6"))["6.1"][1]


def test_the_first_tables_positions_are_numbered_0_to_3_everywhere():
    rules = flat((ROOT / "RULES.md").read_text(encoding="utf-8"))
    for text in (rules, flat(DOC)):
        assert not re.search(r"\bpositions 1\b|\bposition 4\b|\bslots 1 to 4\b", text)
    assert "in positions 0 to 3" in rules and "table positions 0 to 3 in turn" in rules
    assert "the table, positions 0 to 3" in flat(section("9"))


def field_paths(value, prefix: str = "") -> set[str]:
    """Every field of a JSON value by its path, "[]" standing for each element of an array."""
    if isinstance(value, dict):
        found = set()
        for key, inner in value.items():
            path = f"{prefix}.{key}" if prefix else key
            found |= {path} | field_paths(inner, path)
        return found
    if isinstance(value, list):
        return set().union(*(field_paths(item, prefix + "[]") for item in value)) if value else set()
    return set()


@pytest.mark.parametrize(
    "name, version", [("fair_deal.json", 1), ("example_session.json", 2), ("signed_records.json", 2)]
)
def test_each_vector_file_describes_every_field_it_holds(name, version):
    data = json.loads((VECTORS / name).read_text())
    described = data["fields"]
    held = {p for p in field_paths(data) if not p.startswith(("fields.", "conventions."))}
    assert held == set(described), f"undescribed: {held - set(described)}; described but absent: {set(described) - held}"
    assert all(isinstance(text, str) and text for text in described.values())
    assert f"protocol version {version}" in data["protocol"]


def test_the_files_a_stranger_needs_are_named_and_shipped_with_a_readme():
    needed = ["fair_deal.json", "example_session.json", "example_session.basra", "signed_records.json", "hidden_deal.json"]
    text = flat(section("13"))
    assert "needs these five files" in text and "shipped on its own as `vectors/`" in text
    readme = (VECTORS / "README.md").read_text(encoding="utf-8")
    for name in needed:
        assert f"`{name}`" in text and (VECTORS / name).is_file()
        assert re.search(rf"^\| `{re.escape(name)}` \|.*\| yes", readme, re.M), name
    shipped = {p.name for p in VECTORS.iterdir() if p.is_file() and not p.name.startswith("generate_")}
    listed = set(re.findall(r"^\| `([\w.]+)` \|", readme, re.M))
    assert listed == shipped, "the README's table is the folder as shipped"
    # No section sends a reader to a folder or a program that is not shipped with the vectors.
    for number in ("9", "11", "13", "14", "15"):
        assert "tests/vectors/generate" not in section(number) and "being wired" not in readme
    assert "generate_" not in "".join(re.findall(r"^\|.*", readme, re.M))


def test_section_8_2_says_both_transports_end_the_stream_at_once():
    text = flat(section("8"))
    assert "is the same over TLS and over plain TCP" in text
    assert "a TLS `close_notify` over TLS" in text


# --- section 2: the implementer's path keeps to the code -------------------------------------------


@dataclass(frozen=True)
class Transition:
    state: str
    mode: str  # "any", "commit" or "hidden"
    sent: bool  # the side the table belongs to sends the message
    type: str
    condition: str  # "", "with `f`", "without `f`" or "of `v`"
    next: str


def state_table(title: str) -> list[Transition]:
    """The rows of one of 2.4's tables, the one after the paragraph that starts with its title in bold."""
    body = sections("###", section("2"))["2.4"][1]
    return [row for row, _ in transitions(body, body.index(f"**{title}**"))]


def transitions(body: str, start: int) -> list[tuple[Transition, str]]:
    """The rows, with their notes, of the first table of transitions in body after start."""
    table = body[body.index("| State |", start) :]
    table = table[: table.index("\n\n")]
    rows = []
    for line in table.splitlines()[2:]:
        state, mode, message, after, notes = [c.strip() for c in line.strip().strip("|").split("|")]
        found = re.fullmatch(r"(←|→) `(\w+)`(?: (with|without|of) `(\w+)`)?", message)
        assert found, f"cannot read the message {message!r}"
        arrow, kind, word, value = found.groups()
        rows.append((Transition(state, mode, arrow == "→", kind, f"{word} `{value}`" if word else "", after), notes))
    return rows


def row_applies(row: Transition, state: str, mode: str, sent: bool, message: Message, seen: list[str]) -> bool:
    if row.sent != sent or row.type != message.TYPE or row.mode not in ("any", mode):
        return False
    if row.state.startswith("any after "):
        if row.state.removeprefix("any after ") not in seen or state in ("START", "CLOSED"):
            return False
    elif row.state != state:
        return False
    word, _, value = row.condition.partition(" ")
    value = value.strip("`")
    if word == "with":
        return getattr(message, value) is not None
    if word == "without":
        return getattr(message, value) is None
    if word == "of":
        return message.of == value
    return True


# Not in 2.4's tables: they change no state (2.4), and a refusal ends the session's connection.
STATELESS = {"ping", "pong", "away", "back", "chat", "error"}


def walk(table: list[Transition], frames: list[tuple[str, Message]], side: str) -> str:
    """The state one side's table reaches over a session's frames; a frame no row allows fails."""
    state, mode, seen, before_cut = "START", "commit", ["START"], None
    for number, (sender, message) in enumerate(frames, start=1):
        if message.TYPE in STATELESS or (message.TYPE == "leave" and sender == "guest" and state != "ENDED" and side == "client"):
            if message.TYPE == "leave" or (message.TYPE == "error" and message.code in errors.FATAL_CODES):
                state = "CLOSED"
            continue
        if message.TYPE == "hello" and state != "START":  # a resume: a new connection, from the top (2.6)
            before_cut, state = state, "START"
        sent = (sender == "host") == (side == "host")
        rows = [r for r in table if row_applies(r, state, mode, sent, message, seen)]
        if message.TYPE == "leave" and not rows and side == "host" and state != "AWAIT_LEAVE":
            return "CLOSED"  # a leave in any other state abandons the match
        assert len(rows) == 1, f"frame {number}, {sender} `{message.TYPE}`, in {state}: rows {rows}"
        state = rows[0].next
        if isinstance(message, messages.MatchStart) and message.deal == messages.HIDDEN_DEAL:
            mode = "hidden"
        if isinstance(message, Welcome) and before_cut is not None:
            state, before_cut = before_cut, None
        seen.append(state)
    return state


V2_SESSIONS = [s for s in EXAMPLE["sessions"] if s["section"] != "12.3"]


@pytest.mark.parametrize("side", ["client", "host"])
@pytest.mark.parametrize("session", V2_SESSIONS, ids=lambda s: s["name"])
def test_every_example_session_walks_through_2_4s_state_tables(session, side):
    frames = [(f["from"], decode_one(bytes.fromhex(f["hex"]))) for f in session["frames"]]
    table = state_table("The client." if side == "client" else "The host")
    end = walk(table, frames, side)
    assert end == "CLOSED"


def version_1_table(side: str) -> list[Transition]:
    """2.4's table of one side as Section 17 changes it for a connection of version 1."""
    own = [row for row, notes in transitions(section("17"), 0) if notes.startswith(f"the {side}")]
    assert own, f"section 17 has rows for {side}"
    replaced = {(row.state, row.sent, row.type) for row in own}
    kept = [
        row
        for row in state_table("The client." if side == "client" else "The host")
        if row.mode in ("any", "commit") and row.type not in ("pake", "pake_confirm", "sig") and (row.state, row.sent, row.type) not in replaced
    ]
    return kept + own


@pytest.mark.parametrize("side", ["client", "host"])
def test_a_version_1_match_walks_through_2_4s_tables_as_section_17_changes_them(side):
    import dataclasses

    import trio
    from trio.testing import MockClock

    generator = load_generator()
    script = dataclasses.replace(generator.SCRIPTS[0], versions=(1,), code=None, host_player_says=None)
    session = trio.run(generator.run_session, script, clock=MockClock(autojump_threshold=1.0))
    frames = [(frame.sender, frame.message) for frame in session.frames]
    welcome = next(message for _, message in frames if isinstance(message, Welcome))
    assert welcome.version == 1 and not any(message.TYPE == "sig" for _, message in frames)
    assert [message.TYPE for _, message in frames][-2:] == ["match_end", "leave"]
    # match_end is the last stream message: the client's leave answers it, as the host awaits.
    answering = "ENDED" if side == "client" else "AWAIT_LEAVE"
    assert walk(version_1_table(side), frames[:-1], side) == answering
    assert walk(version_1_table(side), frames, side) == "CLOSED"
    v2_table = state_table("The client." if side == "client" else "The host")
    assert walk(v2_table, frames[:-1], side) != answering, "version 2's tables await the result's sig"


def test_2_4s_tables_name_only_version_2_messages_in_their_direction():
    directions = {kind.type: kind.direction for kind in messages.CATALOGUE}
    for side in ("client", "host"):
        for row in state_table("The client." if side == "client" else "The host"):
            from_host = row.sent == (side == "host")
            assert directions[row.type].startswith("host") == from_host or directions[row.type].startswith("either"), row


def vector_field(data, path: str):
    """The value at a path of 2.5 ("[]" takes the first element)."""
    for part in path.split("."):
        if part.endswith("[]"):
            data = data[part[:-2]][0]
        else:
            data = data[part]
    return data


def test_2_5_names_every_label_of_the_code_and_a_vector_field_that_exists_for_each_construction():
    body = sections("###", section("2"))["2.5"][1]
    files = {"F": "fair_deal.json", "S": "signed_records.json", "H": "hidden_deal.json"}
    rows = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith(("| Construction", "|---"))]
    assert len(rows) >= 19
    labels = set()
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        labels |= set(re.findall(r"`(basra-net/[\w/-]+)`", cells[1]))
        assert f"### {cells[3]} " in DOC, f"2.5 cites section {cells[3]}"
        letter, path = re.fullmatch(r"([FSH]) `([\w.\[\]]+)`", cells[4]).groups()
        data = json.loads((VECTORS / files[letter]).read_text())
        assert vector_field(data, path) not in (None, "", [], {}), f"2.5: {files[letter]} has no {path}"
    code = "\n".join(p.read_text() for p in (ROOT / "basra_net").rglob("*.py"))
    in_code = set(re.findall(r'b?"(basra-net/v[12]/[\w/-]+)"', code)) - {label for label in re.findall(r'b?"(basra-net/v2/[\w/-]+)"', code) if "example" in label or "vector" in label}
    assert labels == in_code, f"in the code, not in 2.5: {in_code - labels}; in 2.5, not in the code: {labels - in_code}"


def test_the_example_transcript_holds_no_message_the_catalogue_leaves_unrecorded():
    """6.2's Recorded column: the code exchange (6.21, 6.22) is no part of a transcript, the example's included."""
    decoder = FrameDecoder()
    decoder.feed((VECTORS / "example_session.basra").read_bytes())
    kinds = set()
    while (frame := decoder.next_message()) is not None:
        if frame["type"] == "record":
            kinds.add(decode_body(frame["body"])["type"])
    unrecorded = {kind.type for kind in messages.CATALOGUE if not kind.recorded}
    assert {"pake", "pake_confirm"} <= unrecorded
    assert kinds and not kinds & unrecorded, kinds & unrecorded


def test_11_6_shows_the_example_transcript_as_it_is_in_format_2():
    generator = load_generator()
    decoder = FrameDecoder()
    decoder.feed((VECTORS / "example_session.basra").read_bytes())
    frames = []
    while (frame := decoder.next_message()) is not None:
        frames.append(frame)
    shown = frames[:2] + [next(f for f in frames if f["type"] == "note")]
    block = "```text\n" + "\n".join(generator.notation(f) for f in shown) + "\n```\n"
    body = sections("###", section("11"))["11.6"][1]
    assert "<!-- transcript example -->\n" + block + "<!-- end of transcript example -->" in body
    assert '"format": 2' in block and "in format 2" in flat(body)


# --- the errata a client built from this document alone found, each kept fixed ------------------


def session_messages(section_number: str) -> list[tuple[str, Message]]:
    session = next(s for s in EXAMPLE["sessions"] if s["section"] == section_number)
    return [(f["from"], decode_one(bytes.fromhex(f["hex"]))) for f in session["frames"]]


def test_the_hidden_deal_sends_its_replacements_one_at_a_time_as_12_5_says():
    assert "unmasked and revealed, one at a time" in flat(sections("###", section("12"))["12.5"][1])
    frames = session_messages("12.5")
    first_deal = next(i for i, (_, m) in enumerate(frames) if m.TYPE == "deal")
    opening = [m.TYPE for _, m in frames[:first_deal] if m.TYPE in ("open", "opened")]
    after_the_locks = opening[opening.index("opened") :]
    assert after_the_locks == ["opened", "open"] * (len(after_the_locks) // 2), opening
    assert len(after_the_locks) == 6  # 8 to 11, then each of the two replacements


def test_6_8s_hand_is_empty_in_the_hidden_deal():
    assert "empty in the hidden deal" in flat(catalogue_entry("deal"))
    deals = [m for _, m in session_messages("12.5") if m.TYPE == "deal"]
    assert len(deals) == 6 and all(d.hand == () for d in deals)


def test_version_2s_client_answers_match_end_only_after_the_results_sig():
    assert "the client answers only after that `sig`" in flat(catalogue_entry("match_end"))
    assert "follows the client table of 2.4" in flat(sections("###", section("7"))["7.2"][1])
    for number in ("12.1", "12.5"):
        tail = [(s, m.TYPE) for s, m in session_messages(number)][-4:]
        assert tail == [("host", "match_end"), ("host", "sig"), ("guest", "sig"), ("guest", "leave")]


def test_sig_is_a_stream_message_only_from_the_host():
    assert "`sig` only as the host sends it" in flat(sections("###", section("6"))["6.2"][1])
    assert "Messages from the client (`seed`, `play`, its `sig`)" in flat(section("14"))


def test_9_10_says_what_a_version_1_client_does_after_a_failed_check():
    text = flat(sections("###", section("9"))["9.10"][1])
    assert "MAY play on to the match's end" in text and "MAY stop at once" in text and "In version 2 it MUST stop" in text


def test_14_6_says_where_the_absent_seat_comes_from():
    assert "absent_seat is not on the wire: it is the seat that abandoned" in flat(section("14"))


def test_15_fixes_the_byte_order_of_a_reduced_scalar_and_the_card_name():
    text = flat(section("15"))
    assert "reads 64 random bytes as a little-endian integer, reduces it mod L" in text
    assert 'lp("basra-net/v2/hidden-deal/card") || lp(name)' in text and "|| lp(label)" not in text
    assert "sends seat 0 its `audited` (the relay of seat 1's scalar) followed by its `sig`" in text
    assert "its permutation π (15.5), the locked lists and public points of the game" in text


def test_2_7_states_the_exit_status_contract_the_checker_applies():
    from basra_net.conformance import client_check, relayed_table

    text = flat(sections("###", section("2"))["2.7"][1])
    assert client_check.EXIT_TIMEOUT == relayed_table.EXIT_TIMEOUT == 30
    assert "the client exits within 30 seconds of the match's end" in text
    assert "refuses its `hello` with `unsupported_version`" in text and client_check.SCRIPTED_VERSION == 1


def test_version_2_is_the_protocol_and_version_1_a_compatibility_part():
    assert DOC.splitlines()[2].startswith("Protocol version 2") and max(messages.PROTOCOL_VERSIONS) == 2
    intro = sections("###", section("1"))
    assert "This document specifies protocol version 2" in flat(intro["1.3"][1])
    assert "unreleased" not in DOC and "this section holds" not in DOC
    assert "1.4" not in intro and TOP["17"][0] == "Compatibility: version 1", "version 1 is one part, at the end"
    assert "Section 17 says what differs" in flat(intro["1.3"][1])
    assert not any(title.startswith("Version 2") for title, _ in TOP.values()), "no part of the protocol is a later addition"


def test_2_6_sends_again_what_5_8_rule_6_says_in_its_order():
    from basra_net.protocol.connection import SENT_AGAIN

    checklist = flat(sections("###", section("2"))["2.6"][1])
    rule = flat(section("5"))
    assert "each `lock`, `open` and `audit` it sent since the last `shuffle`, `deal` or `hidden_turn` it took" in checklist
    assert "each `lock`, `open` and `audit` (15.15) it sent, in the order it sent them, since the last `shuffle`, `deal` or `hidden_turn` it took" in rule
    step_4 = checklist[checklist.index("4. Send again") : checklist.index("5. Take the replay")]
    named = [re.search(rf"`{kind.TYPE}`", step_4).start() for kind in SENT_AGAIN]
    assert named == sorted(named), "2.6 lists the answers in the order the client sends them again"


def test_9_11s_worked_example_is_the_counting_bytes_case_of_the_vectors():
    case = next(c for c in json.loads((VECTORS / "fair_deal.json").read_text())["cases"] if c["name"] == "counting-bytes")
    body = sections("###", section("9"))["9.11"][1]
    rows = {cells[0]: cells[1] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in body.splitlines() if line.startswith("| "))}
    counting = {"client_nonce": 0x20, "host_seed": 0x40, "client_seed": 0x60}
    assert rows["match_id"] == f"`{case['inputs']['match_id']}`" and case["inputs"]["game"] == 1
    for name, first in counting.items():
        assert rows[name] == f"32 bytes `{first:02x}` to `{first + 31:02x}`" and case["inputs"][name] == bytes(range(first, first + 32)).hex()
    assert rows["commitment (9.4; its input is 119 bytes)"] == f"`{case['commitment']}`"
    assert rows["K (9.5; its input is 121 bytes)"] == f"`{case['deck_key']}`"
    words = re.findall(r"`([0-9a-f]{8})`", rows["the first words of the stream (9.6)"])
    assert words == [f"{w:08x}" for w in case["stream_words"][: len(words)]]
    draws = case["draws"][:6]
    assert [d["masked"] for d in draws] == [39, 48, 32, 44, 51, 24] and [d["accepted"] for d in draws] == [True] * 4 + [False, True]
    assert [d["n"] for d in draws] == [52, 51, 50, 49, 48, 48]
    rejected = sum(not d["accepted"] for d in case["draws"])
    assert rows["words the shuffle takes"] == f"{case['words_consumed']}, {rejected} of them rejected"
    deck = re.search(r"The deck order, top first:\n\n((?:    .+\n)+)", body).group(1).split()
    assert deck == case["deck"]
