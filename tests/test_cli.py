"""The command line: its light copies of constants agree with the modules that own them; its argument checks."""

from __future__ import annotations

import pytest

from basra_net import cli
from basra_net.client import join, players
from basra_net.host import table


def test_the_cli_copies_agree_with_their_owners():
    assert cli.DEFAULT_PORT == join.DEFAULT_PORT
    assert cli.BOT_LEVELS == players.BOT_LEVELS
    assert cli.DEFAULT_BOT == players.DEFAULT_BOT
    assert cli.GRACE == table.GRACE


def test_a_host_or_server_refuses_a_join_code_weaker_than_a_generated_one(capsys):
    for command in (["serve", "--code", "1"], ["host", "--code", "12345678"]):
        with pytest.raises(SystemExit) as info:
            cli.build_parser().parse_args(command)
        assert info.value.code == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
        assert len(errors) == 1 and "weaker than a generated one" in errors[0]
    assert cli.build_parser().parse_args(["serve", "--code", "K7M-2QX"]).code == "K7M-2QX"
