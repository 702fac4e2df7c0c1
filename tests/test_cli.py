"""The command line: its light copies of constants agree with the modules that own them; its argument checks."""

from __future__ import annotations

import re
import tempfile

import pytest

from basra_net import cli, options
from basra_net.client import verify_file


def test_the_options_offered_are_the_engine_s_presets_and_the_parser_loads_nothing_heavy():
    import subprocess
    import sys

    from basra_net.engine.scoring import PRESETS

    assert options.SCORING_PRESETS == tuple(PRESETS) and options.DEFAULT_SCORING in PRESETS
    assert options.DEFAULT_BOT in options.BOT_LEVELS
    parser = cli.build_parser()
    assert parser.parse_args(["host"]).scoring == options.DEFAULT_SCORING and parser.parse_args(["serve"]).port == options.DEFAULT_PORT
    # What `basra --help` loads: the parser and its leaf of options, never the engine, trio or the network.
    probe = "import sys, basra_net.cli; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True).stdout.split()
    heavy = [m for m in loaded if m.split(".")[0] in ("trio", "msgpack", "cryptography", "textual") or m.startswith("basra_net.engine")]
    assert not heavy, heavy


def test_a_host_or_server_refuses_a_join_code_weaker_than_a_generated_one(capsys):
    for command in (["serve", "--code", "1"], ["host", "--code", "12345678"]):
        with pytest.raises(SystemExit) as info:
            cli.build_parser().parse_args(command)
        assert info.value.code == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
        assert len(errors) == 1 and "weaker than a generated one" in errors[0]
    assert cli.build_parser().parse_args(["serve", "--code", "K7M-2QX"]).code == "K7M-2QX"


def test_every_command_s_help_ends_with_an_example(basra_command):
    import subprocess

    for command in ([], ["host"], ["join"], ["serve"], ["list"], ["forget"], ["verify"], ["replay"],
                    ["conformance"], ["conformance", "client"], ["conformance", "host"]):
        done = subprocess.run([*basra_command, *command, "--help"], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (command, done.stderr)
        heading = re.search(r"^examples?:$", done.stdout, re.M)
        assert heading, (command, done.stdout)
        examples = done.stdout[heading.end():]
        assert "\n  basra " in examples, (command, done.stdout)


def test_version(basra_command):
    import subprocess

    from basra_net import __version__

    done = subprocess.run([*basra_command, "--version"], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == f"basra {__version__}"


def test_an_unexpected_exception_is_one_line_and_a_crash_report_with_the_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))

    def broken(path, verbose=False, partial=False):
        raise RuntimeError("the engine fell over\nsecond line")

    monkeypatch.setattr(verify_file, "verify_file", broken)
    assert cli.main(["verify", "some.basra"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("basra verify: unexpected error (RuntimeError: the engine fell over); this is a bug")
    (report,) = (tmp_path / "crashes").iterdir()
    assert str(report) in err
    text = report.read_text()
    assert "Traceback" in text and "RuntimeError: the engine fell over" in text and "basra verify some.basra" in text


def test_a_crash_report_goes_to_the_temporary_directory_when_the_data_directory_is_broken(tmp_path, monkeypatch, capsys):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    monkeypatch.setenv("BASRA_HOME", str(not_a_folder))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(verify_file, "verify_file", lambda path, verbose=False, partial=False: 1 / 0)
    assert cli.main(["verify", "x.basra"]) == 1
    (report,) = (tmp_path / "tmp" / "basra-net-crashes").iterdir()
    assert str(report) in capsys.readouterr().err and "ZeroDivisionError" in report.read_text()


@pytest.mark.parametrize("raised", [KeyboardInterrupt(), BaseExceptionGroup("tasks", [KeyboardInterrupt()])], ids=["bare", "in-a-group"])
def test_ctrl_c_anywhere_ends_with_130_and_no_traceback(monkeypatch, capsys, raised):
    def interrupted(path, verbose=False, partial=False):
        raise raised

    monkeypatch.setattr(verify_file, "verify_file", interrupted)
    assert cli.main(["verify", "x.basra"]) == 130
    assert capsys.readouterr().err == "basra verify: interrupted\n"


def test_serve_runs_with_a_larger_young_generation_and_gives_the_old_one_back(monkeypatch):
    import gc

    from basra_net.host import command

    seen = []
    monkeypatch.setattr(command.trio, "run", lambda *args: seen.append(gc.get_threshold()))
    before = gc.get_threshold()
    assert command.run_serve_command(cli.build_parser().parse_args(["serve", "--no-journal"])) == 0
    assert seen == [(command.SERVE_YOUNG_GENERATION, *before[1:])]
    assert gc.get_threshold() == before
