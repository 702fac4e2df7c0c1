"""The host's journal: what is written reads back exactly, and a journal with any fault is refused whole."""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import tracemalloc

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from basra_net.host import journal
from basra_net.host.journal import MAGIC, MAX_RECORD, JournalError, JournalWriter, load_journal

HEADER = {"type": "header", "format": 1, "match_id": bytes(range(16)), "target": 60}

EVERY_KIND = {
    "type": "play",
    "none": None,
    "yes": True,
    "no": False,
    "zero": 0,
    "small": -7,
    "int64_min": -(2**63),
    "uint64_max": 2**64 - 1,
    "text": "ورق basra ♣",
    "empty_text": "",
    "blob": b"\x00\xff\x80 bytes",
    "empty_blob": b"",
    "text_like_blob": b"text",
    "list": [1, "two", b"three", None, [], {}],
    "nested": {"hand": [["7", "hearts"], ["J", "clubs"]], "seed": {"value": b"\x01" * 32}},
}


def _chain(bodies: list[bytes]) -> bytes:
    """A journal built from the format in the module docstring, without the module."""
    out = bytearray(MAGIC)
    check = hashlib.sha256(MAGIC).digest()
    for body in bodies:
        check = hashlib.sha256(check + body).digest()
        out += struct.pack(">I", len(body)) + body + check
    return bytes(out)


def _body(value) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def _read_independently(data: bytes) -> list:
    """Every record of a journal, read by the documented format alone."""
    assert data.startswith(MAGIC)
    check, offset, records = hashlib.sha256(MAGIC).digest(), len(MAGIC), []
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        body = data[offset + 4 : offset + 4 + length]
        check = hashlib.sha256(check + body).digest()
        assert data[offset + 4 + length : offset + 4 + length + 32] == check
        records.append(msgpack.unpackb(body, raw=False))
        offset += 4 + length + 32
    return records


def _write_journal(path, records) -> None:
    with JournalWriter.create(path, HEADER) as writer:
        for record in records:
            writer.append(record)


def _refused(path) -> str:
    with pytest.raises(JournalError) as caught:
        load_journal(path)
    message = str(caught.value)
    assert str(path) in message
    return message


def _exactly(value, expected) -> None:
    """Equal, with the same types all the way down (bytes is not str, bool is not int, lists are lists)."""
    assert type(value) is type(expected), (value, expected)
    if isinstance(expected, dict):
        assert list(value) == list(expected)
        for key in expected:
            _exactly(value[key], expected[key])
    elif isinstance(expected, list):
        assert len(value) == len(expected)
        for got, want in zip(value, expected):
            _exactly(got, want)
    else:
        assert value == expected


# Round trip


def test_header_and_records_of_every_kind_read_back_exactly(tmp_path):
    path = tmp_path / "match.journal"
    records = [dict(EVERY_KIND, move=n) for n in range(200)]
    _write_journal(path, records)

    header, loaded = load_journal(path)

    _exactly(header, HEADER)
    assert len(loaded) == len(records)
    for got, want in zip(loaded, records):
        _exactly(got, want)


def test_the_file_is_the_documented_format(tmp_path):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "move", "n": 1}, {"type": "move", "n": 2}])

    data = path.read_bytes()

    assert data == _chain([_body(HEADER), _body({"type": "move", "n": 1}), _body({"type": "move", "n": 2})])
    assert _read_independently(data) == [HEADER, {"type": "move", "n": 1}, {"type": "move", "n": 2}]


def test_a_journal_built_by_another_tool_loads(tmp_path):
    path = tmp_path / "other.journal"
    path.write_bytes(_chain([_body(HEADER), _body({"type": "x", "v": [1, 2]})]))

    assert load_journal(path) == (HEADER, [{"type": "x", "v": [1, 2]}])


def test_tuples_are_written_as_arrays_and_read_back_as_lists(tmp_path):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "deal", "cards": (("7", "hearts"), ("K", "spades"))}])

    _, (record,) = load_journal(path)

    _exactly(record, {"type": "deal", "cards": [["7", "hearts"], ["K", "spades"]]})


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_records = st.dictionaries(st.text(max_size=8), _values, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header_extra=_records, records=st.lists(_records, max_size=6))
def test_any_records_of_the_allowed_values_read_back_exactly(tmp_path, header_extra, records):
    path = tmp_path / "any.journal"
    path.unlink(missing_ok=True)
    header = {**header_extra, "type": "header"}
    with JournalWriter.create(path, header) as writer:
        for record in records:
            writer.append(record)

    got_header, got_records = load_journal(path)

    _exactly(got_header, header)
    _exactly(got_records, records)


# Resume


def test_resume_returns_the_records_and_continues_the_chain(tmp_path):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "move", "n": 1}])

    writer, header, records = JournalWriter.resume(path)
    with writer:
        assert writer.path == path
        assert (header, records) == (HEADER, [{"type": "move", "n": 1}])
        writer.append({"type": "move", "n": 2})
    writer, _, records = JournalWriter.resume(path)
    with writer:
        assert records == [{"type": "move", "n": 1}, {"type": "move", "n": 2}]
        writer.append({"type": "move", "n": 3})

    assert load_journal(path) == (HEADER, [{"type": "move", "n": n} for n in (1, 2, 3)])
    assert _read_independently(path.read_bytes())[1:] == [{"type": "move", "n": n} for n in (1, 2, 3)]


def test_resume_refuses_a_damaged_journal(tmp_path):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "move", "n": 1}])
    data = bytearray(path.read_bytes())
    data[-40] ^= 0x01
    path.write_bytes(bytes(data))

    with pytest.raises(JournalError, match="record 2 is damaged"):
        JournalWriter.resume(path)
    assert path.read_bytes() == bytes(data)


def test_a_journal_has_one_writer_at_a_time(tmp_path):
    path = tmp_path / "match.journal"
    with JournalWriter.create(path, HEADER):
        with pytest.raises(JournalError, match="in use"):
            JournalWriter.resume(path)
    writer, _, _ = JournalWriter.resume(path)
    with writer:
        with pytest.raises(JournalError, match="in use"):
            JournalWriter.resume(path)


# Cut short, damaged, not a journal


def test_every_cut_of_a_three_record_journal_is_refused_or_whole_records(tmp_path):
    records = [{"type": "move", "n": 1, "card": b"\x07"}, {"type": "move", "n": 2, "text": "x" * 40}]
    full = tmp_path / "full.journal"
    _write_journal(full, records)
    data = full.read_bytes()
    # Where each whole record ends: a cut there is a journal with fewer records
    # (a crash between two appends), the only cuts that load.
    ends, offset = {}, len(MAGIC)
    for count, body in enumerate([_body(HEADER), *map(_body, records)]):
        offset += 4 + len(body) + 32
        ends[offset] = count
    assert offset == len(data)

    cut = tmp_path / "cut.journal"
    for size in range(len(data)):
        cut.write_bytes(data[:size])
        if size in ends:
            assert load_journal(cut) == (HEADER, records[: ends[size]])
            continue
        message = _refused(cut)
        if size == 0:
            assert "is empty" in message
        else:
            assert "it was cut short" in message
        if size > len(MAGIC):
            number = 1 + sum(1 for end in ends if end <= size)
            assert f"ends in the middle of record {number};" in message


def test_a_flipped_bit_anywhere_is_refused(tmp_path):
    good = tmp_path / "good.journal"
    _write_journal(good, [{"type": "move", "n": 1}, {"type": "move", "n": 2, "b": b"\x00"}])
    data = good.read_bytes()

    bad = tmp_path / "bad.journal"
    for position in range(len(data)):
        for bit in range(8):
            damaged = bytearray(data)
            damaged[position] ^= 1 << bit
            bad.write_bytes(bytes(damaged))
            message = _refused(bad)
            if position < len(MAGIC):
                assert "is not a basra-net journal" in message


def test_a_damaged_check_names_its_record(tmp_path):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "move", "n": 1}, {"type": "move", "n": 2}])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x80

    path.write_bytes(bytes(data))

    assert "record 3 is damaged (its check value does not match)" in _refused(path)


def test_a_record_taken_out_of_the_middle_is_refused(tmp_path):
    bodies = [_body(HEADER), _body({"type": "a"}), _body({"type": "b"})]
    whole = _chain(bodies)
    second_start = len(MAGIC) + 4 + len(bodies[0]) + 32
    second_end = second_start + 4 + len(bodies[1]) + 32
    path = tmp_path / "gap.journal"
    path.write_bytes(whole[:second_start] + whole[second_end:])

    assert "record 2 is damaged" in _refused(path)


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"shopping list: bread, milk, a deck of cards\n", "is not a basra-net journal"),
        (_body({"type": "transcript", "format": 1, "role": "host"}), "is not a basra-net journal"),  # a transcript
        (b"", "is empty"),
        (MAGIC[:9], "ends in its first line; it was cut short"),
        (MAGIC, "ends before its header; it was cut short"),
    ],
)
def test_a_file_that_is_not_a_whole_journal_is_refused(tmp_path, content, problem):
    path = tmp_path / "match.journal"
    path.write_bytes(content)

    assert problem in _refused(path)


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00",
        b"\n",
        b"\x00\x00\x00",
        b"\x00\x00\x00\x00",  # an empty body and no check
        b"garbage after the last record",
        b"\x00" * 100,
        b"\xff" * 100,
    ],
)
def test_trailing_garbage_is_refused(tmp_path, garbage):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "move", "n": 1}])
    path.write_bytes(path.read_bytes() + garbage)

    assert "record 3" in _refused(path)


def test_a_record_repeated_at_the_end_is_refused(tmp_path):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "move", "n": 1}])
    data = path.read_bytes()
    last = data[-(4 + len(_body({"type": "move", "n": 1})) + 32) :]
    path.write_bytes(data + last)

    assert "record 3 is damaged (its check value does not match)" in _refused(path)


@pytest.mark.parametrize("declared", [MAX_RECORD + 1, 0x7FFFFFFF, 0xFFFFFFFF])
def test_an_oversized_length_is_refused_without_reading_it(tmp_path, declared):
    path = tmp_path / "huge.journal"
    path.write_bytes(_chain([_body(HEADER)]) + struct.pack(">I", declared) + b"\x80" * 64)

    tracemalloc.start()
    try:
        message = _refused(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert "record 2 is damaged or not part of the journal" in message
    assert str(declared) in message
    assert peak < 256 * 1024


def test_a_length_just_over_the_limit_is_refused_even_when_the_bytes_are_there(tmp_path):
    body = _body({"type": "big", "blob": b"\x00" * MAX_RECORD})
    assert len(body) > MAX_RECORD
    path = tmp_path / "big.journal"
    path.write_bytes(_chain([_body(HEADER), body]))

    assert "a record holds at most 1048576" in _refused(path)


@pytest.mark.parametrize(
    "body, problem",
    [
        (_body([1, 2, 3]), "is not a msgpack map"),
        (_body("header"), "is not a msgpack map"),
        (_body(7), "is not a msgpack map"),
        (b"", "is not one msgpack map"),
        (b"\xc1", "is not one msgpack map"),  # a byte msgpack never uses
        (b"\x81\xa1a", "is not one msgpack map"),  # a map cut off inside
        (_body({"type": "x"}) + _body({"type": "y"}), "is not one msgpack map"),  # two maps
        (b"\x81\xa4type\xa2\xff\xfe", "is not one msgpack map"),  # a str that is not UTF-8
        (_body({1: "x", "type": "x"}), "is not one msgpack map"),  # an int key
        (_body({b"type": "x"}), "has a map key of type bytes"),
        (_body({"type": "x", "f": 1.5}), "holds a float"),
        (_body({"type": "x", "e": msgpack.ExtType(1, b"")}), "holds a msgpack extension type"),
        (_body({"type": "x", "e": msgpack.ExtType(1, b"abcd")}), "is not one msgpack map"),
        (b"\x82\xa4type\xa1x\xa1d" + b"\x91" * 40 + b"\x01", "nests values more than 32 levels deep"),
        # Maps in maps, each of the usual shape but for what is named.
        (_body({"type": "x", "m": {"n": {"f": 1.5}}}), "holds a float"),
        (_body({"type": "x", "m": {b"k": 1}}), "has a map key of type bytes"),
        (b"\x82\xa4type\xa1x\xa1d" + b"\x81\xa1d" * 40 + b"\x01", "nests values more than 32 levels deep"),
        (b"\x82\xa4type\xa1x\xa1d" + b"\x81\xa1d" * 29 + b"\x91\x91\x01", "nests values more than 32 levels deep"),
    ],
)
def test_a_checked_body_that_is_not_a_map_of_journal_values_is_refused(tmp_path, body, problem):
    path = tmp_path / "odd.journal"
    path.write_bytes(_chain([_body(HEADER), body]))

    message = _refused(path)

    assert f"record 2 {problem}" in message


def test_the_first_record_must_be_a_header(tmp_path):
    path = tmp_path / "headless.journal"
    path.write_bytes(_chain([_body({"type": "move", "n": 1}), _body(HEADER)]))

    assert 'record 1 is not a journal header (it has no "type": "header")' in _refused(path)


def test_a_first_record_that_is_not_a_map_is_refused(tmp_path):
    path = tmp_path / "list.journal"
    path.write_bytes(_chain([_body(["type", "header"])]))

    assert "record 1 is not a msgpack map" in _refused(path)


# Files that are not there or cannot be read


def test_a_missing_file_is_a_journal_error(tmp_path):
    path = tmp_path / "nowhere.journal"

    assert "there is no such file" in _refused(path)
    with pytest.raises(JournalError, match="there is no such file"):
        JournalWriter.resume(path)
    assert not path.exists()


def test_a_folder_is_not_a_journal(tmp_path):
    assert "is a folder, not a journal" in _refused(tmp_path)
    with pytest.raises(JournalError, match="is a folder"):
        JournalWriter.resume(tmp_path)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="file modes bind only a user other than root")
def test_an_unreadable_file_is_a_journal_error(tmp_path):
    path = tmp_path / "locked.journal"
    _write_journal(path, [])
    path.chmod(0)

    assert "cannot be read: permission denied" in _refused(path)
    with pytest.raises(JournalError, match="permission denied"):
        JournalWriter.resume(path)


def test_a_read_that_fails_is_a_journal_error(tmp_path, monkeypatch):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "move"}])

    def failing_read(*args):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "read", failing_read)
    with pytest.raises(JournalError, match="cannot be read: input/output error"):
        JournalWriter.resume(path)

    class FailingFile:
        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            return None

        read = staticmethod(failing_read)

    monkeypatch.setattr(journal, "open", lambda *args: FailingFile(), raising=False)
    assert "cannot be read: input/output error" in _refused(path)


# Writing


def test_create_never_replaces_a_file(tmp_path):
    path = tmp_path / "match.journal"
    path.write_bytes(b"someone else's file")

    with pytest.raises(JournalError, match="already exists"):
        JournalWriter.create(path, HEADER)
    assert path.read_bytes() == b"someone else's file"


def test_create_refuses_an_existing_journal(tmp_path):
    path = tmp_path / "match.journal"
    _write_journal(path, [{"type": "move"}])
    before = path.read_bytes()

    with pytest.raises(JournalError, match="already exists"):
        JournalWriter.create(path, HEADER)
    assert path.read_bytes() == before


def test_create_in_a_missing_folder_is_a_journal_error(tmp_path):
    with pytest.raises(JournalError, match="there is no such file"):
        JournalWriter.create(tmp_path / "no" / "such" / "match.journal", HEADER)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_new_journal_is_its_owners_alone(tmp_path):
    path = tmp_path / "match.journal"
    _write_journal(path, [])

    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("header", [{"format": 1}, {"type": "move"}, ["type", "header"], None])
def test_create_wants_a_header(tmp_path, header):
    path = tmp_path / "match.journal"

    with pytest.raises(ValueError, match="header"):
        JournalWriter.create(path, header)
    assert not path.exists()


def _maps_in_maps(count: int, innermost: object = 1) -> dict:
    """``count`` maps, each the value of "d" in the one around it, the innermost holding ``innermost``."""
    value = innermost
    for _ in range(count):
        value = {"d": value}
    return value


@pytest.mark.parametrize(
    "record, problem",
    [
        ({"type": "x", "f": 0.5}, "holds a float"),
        ({"type": "x", 3: "three"}, "has a map key of type int"),
        ({"type": "x", "nested": {b"k": 1}}, "has a map key of type bytes"),
        ({"type": "x", "s": {1, 2}}, "holds a set"),
        ({"type": "x", "e": msgpack.ExtType(1, b"")}, "extension type"),
        ({"type": "x", "b": bytearray(b"ab")}, "holds a bytearray"),
        ({"type": "x", "n": 2**64}, "outside msgpack's range"),
        ({"type": "x", "n": -(2**63) - 1}, "outside msgpack's range"),
        ({"type": "x", "n": [1, 2**64]}, "outside msgpack's range"),  # in a map of the usual shape, packed at once
        ({"type": "x", "m": {"n": {"n": 2**64}}}, "outside msgpack's range"),
        ({"type": "x", "m": {"n": {"f": 0.5}}}, "holds a float"),
        ({"type": "x", "deep": _maps_in_maps(32)}, "levels deep"),
        ({"type": "x", "deep": _maps_in_maps(29, [[1]])}, "levels deep"),
        ({"type": "x", "deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}, "levels deep"),
        ({"type": "x", "blob": b"\x00" * MAX_RECORD}, "a record holds at most"),
        (["type", "x"], "must be a dict"),
    ],
)
def test_append_refuses_what_a_journal_cannot_hold_and_writes_nothing(tmp_path, record, problem):
    path = tmp_path / "match.journal"
    with JournalWriter.create(path, HEADER) as writer:
        before = path.read_bytes()
        with pytest.raises(ValueError, match=problem):
            writer.append(record)
        assert path.read_bytes() == before
        writer.append({"type": "after"})

    assert load_journal(path) == (HEADER, [{"type": "after"}])


@settings(max_examples=100, deadline=None)
@given(fixed=_records, value=_records)
def test_a_nested_record_is_encoded_byte_for_byte_as_the_whole_record(fixed, value):
    fixed.pop("record", None)
    encode = journal.nested_record_encoder(fixed, "record")
    assert encode(value) == journal.encode_record({**fixed, "record": value})


@pytest.mark.parametrize(
    "record, problem",
    [
        ({"type": "x", "f": 0.5}, "holds a float"),
        ({"type": "x", 3: "three"}, "has a map key of type int"),
        ({"type": "x", "n": 2**64}, "outside msgpack's range"),
        ({"type": "x", "n": [-(2**63) - 1]}, "outside msgpack's range"),
        ({"type": "x", "deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}, "levels deep"),
        ({"type": "x", "blob": b"\x00" * MAX_RECORD}, "a record holds at most"),
    ],
)
def test_a_nested_record_is_refused_as_the_whole_record_would_be(record, problem):
    with pytest.raises(ValueError, match=problem):
        journal.encode_record({"type": "record", "table": 1, "record": record})
    with pytest.raises(ValueError, match=problem):
        journal.nested_record_encoder({"type": "record", "table": 1}, "record")(record)


def test_a_nested_record_is_a_map():
    with pytest.raises(ValueError, match="must be a dict"):
        journal.nested_record_encoder({"type": "record", "table": 1}, "record")(["type", "x"])


def test_the_deepest_and_largest_allowed_records_are_taken(tmp_path):
    deep: object = 1  # at level 32 inside 30 lists inside the record's map
    for _ in range(journal.MAX_DEPTH - 2):
        deep = [deep]
    overhead = len(_body({"type": "big", "blob": b""})) + 3  # bin 32 carries a 4-byte length, bin 8 one
    biggest = {"type": "big", "blob": b"\x5a" * (MAX_RECORD - overhead)}
    assert len(_body(biggest)) == MAX_RECORD
    path = tmp_path / "match.journal"

    _write_journal(path, [{"type": "deep", "v": deep}, biggest])

    assert load_journal(path) == (HEADER, [{"type": "deep", "v": deep}, biggest])


@pytest.mark.parametrize("maps, fits", [(29, True), (30, False)])
def test_a_list_in_maps_nested_to_the_limit_is_taken_and_one_level_deeper_is_refused(tmp_path, maps, fits):
    """Maps inside the record's map, the innermost holding a list of scalars: those scalars at level 32 fit, at 33 they do not."""
    record: dict = {"v": [1, "two", None]}
    for _ in range(maps - 1):
        record = {"m": record}
    record = {"type": "deep", "m": record}  # the record's map is level 1, its maps 2 to maps + 1, the list's items maps + 3
    path = tmp_path / "match.journal"
    with JournalWriter.create(path, HEADER) as writer:
        if fits:
            writer.append(record)
        else:
            with pytest.raises(ValueError, match="levels deep"):
                writer.append(record)
    assert load_journal(path) == (HEADER, [record] if fits else [])


def test_each_append_is_written_then_fsynced_before_it_returns(tmp_path, monkeypatch):
    calls = []
    real_write, real_fsync = os.write, os.fsync

    def write(fd, data):
        calls.append(("write", fd, bytes(data)))
        return real_write(fd, data)

    def fsync(fd):
        calls.append(("fsync folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync", fd))
        return real_fsync(fd)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "fsync", fsync)
    path = tmp_path / "match.journal"

    writer = JournalWriter.create(path, HEADER)
    created = list(calls)
    calls.clear()
    writer.append({"type": "move", "n": 1})
    appended = list(calls)
    writer.close()

    assert [call[0] for call in created] == ["write", "fsync", "fsync folder"]
    assert created[0][2] == _chain([_body(HEADER)])
    assert created[0][1] == created[1][1]
    assert [call[0] for call in appended] == ["write", "fsync"]
    assert appended[0][1] == appended[1][1]
    assert created[0][2] + appended[0][2] == path.read_bytes()


def test_a_failed_write_is_cut_back_and_the_writer_stops(tmp_path, monkeypatch):
    path = tmp_path / "match.journal"
    writer = JournalWriter.create(path, HEADER)
    writer.append({"type": "move", "n": 1})
    real_write = os.write

    def disk_full(fd, data):
        real_write(fd, bytes(data)[:5])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(JournalError, match="could not be written: no space left on device"):
        writer.append({"type": "move", "n": 2})
    monkeypatch.undo()

    with pytest.raises(JournalError, match="could not be written"):
        writer.append({"type": "move", "n": 3})
    writer.close()
    assert load_journal(path) == (HEADER, [{"type": "move", "n": 1}])


def test_a_failed_create_leaves_no_file(tmp_path, monkeypatch):
    path = tmp_path / "match.journal"

    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(JournalError, match="could not be written: input/output error"):
        JournalWriter.create(path, HEADER)
    assert not path.exists()


def test_close_is_final_and_may_be_repeated(tmp_path):
    path = tmp_path / "match.journal"
    writer = JournalWriter.create(path, HEADER)
    writer.close()
    writer.close()

    with pytest.raises(ValueError, match="closed"):
        writer.append({"type": "move"})
    assert load_journal(path) == (HEADER, [])
