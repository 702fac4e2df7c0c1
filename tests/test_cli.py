"""The command line's light copies of constants agree with the modules that own them."""

from __future__ import annotations

from basra_net import cli
from basra_net.client import join, players
from basra_net.host import table


def test_the_cli_copies_agree_with_their_owners():
    assert cli.DEFAULT_PORT == join.DEFAULT_PORT
    assert cli.BOT_LEVELS == players.BOT_LEVELS
    assert cli.DEFAULT_BOT == players.DEFAULT_BOT
    assert cli.GRACE == table.GRACE
