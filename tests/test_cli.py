"""The command line's light copies of constants agree with the modules that own them."""

from __future__ import annotations

from basra_net import cli
from basra_net.client import players
from basra_net.host import table


def test_the_cli_copies_agree_with_their_owners():
    assert cli.BOT_LEVELS == players.BOT_LEVELS
    assert cli.DEFAULT_BOT == players.DEFAULT_BOT
    assert cli.GRACE == table.GRACE


def test_every_command_s_help_ends_with_an_example(basra_command):
    import subprocess

    for command in ([], ["host"], ["join"], ["serve"], ["forget"], ["verify"], ["replay"]):
        done = subprocess.run([*basra_command, *command, "--help"], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (command, done.stderr)
        examples = done.stdout.split("example")[-1]
        assert "\n  basra " in examples, (command, done.stdout)


def test_version(basra_command):
    import subprocess

    from basra_net import __version__

    done = subprocess.run([*basra_command, "--version"], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == f"basra {__version__}"
