"""What `basra join` does with the tables it found on the LAN: one, several, none; which address; no network."""

from __future__ import annotations

import ipaddress
import json

from basra_net.client.discovery import (
    ChooseFrom,
    FoundTable,
    JoinThis,
    NoneFound,
    as_json,
    decide,
    describe,
    joinable,
    order_addresses,
    parse_choice,
)
from basra_net.protocol.dnssd import Announcement
from basra_net.protocol.messages import PROTOCOL_VERSIONS


def _table(name: str, *, seats: int = 1, versions=PROTOCOL_VERSIONS, port: int = 5252, addresses=("10.0.0.5",), code=False, deals=None) -> FoundTable:
    announcement = Announcement("host", name, "pc", tuple(versions), "3f2a 9c01 77be 04d1", code, True, seats, None, deals)
    return FoundTable(f"{name} on pc", announcement, tuple(addresses), port)


def test_none_found_says_what_to_check_and_how_to_join_by_address():
    decision = decide([], interactive=True)
    assert isinstance(decision, NoneFound)
    for hint in ("same network", "guest Wi-Fi", "UDP port 5353", "TCP port 5252", "basra join HOST[:PORT]"):
        assert hint in decision.message
    assert "\n" not in decision.message


def test_one_table_is_offered_with_a_question_when_someone_is_at_the_keyboard():
    hoda = _table("Hoda")
    assert decide([hoda], interactive=True) == JoinThis(hoda, confirm=True)
    assert decide([hoda], interactive=False) == JoinThis(hoda, confirm=False)


def test_several_tables_are_listed_to_choose_from_in_name_order():
    tables = [_table("Omar"), _table("amal"), _table("Hoda")]
    decision = decide(tables, interactive=True)
    assert isinstance(decision, ChooseFrom)
    assert [t.announcement.table for t in decision.tables] == ["amal", "Hoda", "Omar"]


def test_several_tables_and_nobody_to_choose_is_refused_naming_them():
    decision = decide([_table("Hoda"), _table("Omar", port=5300)], interactive=False)
    assert isinstance(decision, NoneFound)
    assert "Hoda on pc (10.0.0.5)" in decision.message and "Omar on pc (10.0.0.5:5300)" in decision.message


def test_full_tables_and_tables_of_other_versions_are_not_joinable():
    full, foreign, open_ = _table("Full", seats=0), _table("Future", versions=(99,)), _table("Open")
    assert joinable([full, foreign, open_]) == [open_]
    assert decide([full, foreign, open_], interactive=False) == JoinThis(open_, confirm=False)
    decision = decide([full, foreign], interactive=True)
    assert isinstance(decision, NoneFound) and "2 tables seen" in decision.message and "basra list" in decision.message


def test_the_address_on_a_shared_network_comes_first_then_ipv4_then_global_ipv6_then_link_local():
    networks = [ipaddress.ip_network("192.168.1.0/24"), ipaddress.ip_network("fd00:1::/64")]
    assert order_addresses(["172.17.0.1", "192.168.1.20"], networks) == ("192.168.1.20", "172.17.0.1")
    assert order_addresses(["fe80::1%2", "2001:db8::5", "172.17.0.1"], []) == ("172.17.0.1", "2001:db8::5", "fe80::1%2")
    assert order_addresses(["172.17.0.1", "fd00:1::7"], networks) == ("fd00:1::7", "172.17.0.1")
    assert order_addresses(["10.0.0.1", "10.0.0.1"], []) == ("10.0.0.1",)


def test_the_join_argument_brackets_ipv6_and_names_a_port_other_than_the_default():
    assert _table("A").join_argument == "10.0.0.5"
    assert _table("A", port=6000).join_argument == "10.0.0.5:6000"
    assert _table("A", addresses=("2001:db8::5",)).join_argument == "[2001:db8::5]"
    assert _table("A", addresses=("2001:db8::5",), port=6000).join_argument == "[2001:db8::5]:6000"


def test_a_table_is_described_with_its_fingerprint_and_whether_a_code_is_needed():
    line = describe(_table("Hoda", code=True))
    assert "Hoda on pc" in line and "3f2a 9c01 77be 04d1" in line and "join code needed" in line and "1 seat free" in line


def test_a_table_is_described_with_the_deal_it_offers_when_its_announcement_says():
    assert "hidden hands, or the commit-reveal deal for who asks" in describe(_table("Hoda", deals=("hidden", "commit")))
    assert "; hidden hands;" in describe(_table("Hoda", deals=("hidden",)))
    assert "commit-reveal deal only (`basra join --deal commit-reveal`)" in describe(_table("Hoda", deals=("commit",)))
    assert "deal" not in describe(_table("Hoda"))  # an older host's announcement says nothing of it


def test_basra_list_shows_a_full_table_as_full_without_a_join_command(monkeypatch, capsys):
    from basra_net.client import discovery

    monkeypatch.setattr(discovery, "_browse_from_command", lambda command: [_table("Full", seats=0), _table("Open", port=6000)])
    assert discovery.list_tables(as_json_array=False) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Full on pc" in lines[0] and lines[0].endswith("; full)")
    assert "Open on pc" in lines[1] and "1 seat free" in lines[1]
    assert lines[2:] == ["    basra join 10.0.0.5:6000"]


def test_a_choice_is_a_number_in_range():
    assert parse_choice(" 2\n", 3) == 1
    assert [parse_choice(answer, 3) for answer in ("0", "4", "", "two", "-1")] == [None] * 5


def test_json_lists_what_a_script_needs_to_join():
    [entry] = json.loads(as_json([_table("Hoda", port=6000)]))
    assert entry["join"] == "basra join 10.0.0.5:6000"
    assert entry["fingerprint"] == "3f2a 9c01 77be 04d1" and entry["seats"] == 1 and entry["port"] == 6000


def test_a_full_table_where_this_client_holds_a_seat_is_joined_to_resume_it():
    mine, strangers = _table("Hoda", seats=0), _table("Omar", seats=0, port=6000)
    assert decide([mine, strangers], interactive=False, resumable=frozenset({"10.0.0.5"})) == JoinThis(mine, confirm=False)
    assert isinstance(decide([mine, strangers], interactive=False), NoneFound)
