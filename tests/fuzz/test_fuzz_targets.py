"""The fuzz targets of fuzz/: a short atheris run of each, and the committed corpus replayed in-process.

The atheris runs need atheris (Linux; in the project's test extra) and skip
without it. The replay needs nothing but the package: it calls each target's
TestOneInput on every corpus file, with the pure-Python data provider.
Set BASRA_FUZZ_RUNS to change how many executions the short runs make.
"""

from __future__ import annotations

import importlib
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from basra_net.protocol.errors import ProtocolError
from basra_net.protocol.framing import decode_body
from basra_net.protocol.messages import MAX_TEXT

FUZZ_DIR = Path(__file__).resolve().parents[2] / "fuzz"
CORPUS = FUZZ_DIR / "corpus"
DICTIONARY = FUZZ_DIR / "msgpack.dict"
TARGETS = {"frame_decoder": "fuzz_frame_decoder", "host_connection": "fuzz_host_connection"}
RUNS = int(os.environ.get("BASRA_FUZZ_RUNS", "10000"))
MAX_CORPUS_BYTES = 1_000_000
MAX_CORPUS_FILES = 400

if str(FUZZ_DIR) not in sys.path:
    sys.path.insert(0, str(FUZZ_DIR))

fuzz_common = importlib.import_module("fuzz_common")

try:
    import atheris
except ImportError:
    atheris = None

needs_atheris = pytest.mark.skipif(
    atheris is None, reason="atheris is not installed (pip install atheris, Linux; it is in the test extra)"
)


def corpus_files(name: str) -> list[Path]:
    return sorted(path for path in (CORPUS / name).iterdir() if path.is_file())


@pytest.fixture
def without_atheris(monkeypatch):
    """The targets' data provider as it is where atheris is not installed."""
    monkeypatch.setattr(fuzz_common, "atheris", None)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_corpus_replays_in_process(name, without_atheris):
    target = importlib.import_module(TARGETS[name])
    files = corpus_files(name)
    assert files, f"fuzz/corpus/{name} is empty"
    for path in files:
        try:
            target.TestOneInput(path.read_bytes())
        except Exception as exc:
            raise AssertionError(f"fuzz/corpus/{name}/{path.name} fails its target: {exc!r}") from exc


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_corpus_stays_small(name):
    files = corpus_files(name)
    assert len(files) <= MAX_CORPUS_FILES, f"{len(files)} files: prune fuzz/corpus/{name} (see fuzz/README.md)"
    assert sum(path.stat().st_size for path in files) <= MAX_CORPUS_BYTES


def test_host_seeds_get_past_framing_into_the_state_machine(without_atheris):
    """The hand-made seeds get past framing into the state machine: the fuzzer starts from there."""
    target = importlib.import_module("fuzz_host_connection")
    happy = target.run((CORPUS / "host_connection" / "seed-happy-path-leave").read_bytes())
    assert happy.log[:5] == ["hello", "seed", "play", "stale_request", "play"]
    assert happy.log[-1] == "leave" and happy.connection.closed
    session = target.run((CORPUS / "host_connection" / "seed-complete-match-guest").read_bytes())
    assert session.log.count("play") == 25 and "seed" in session.log


def test_input_builder_is_read_back_exactly():
    rng = random.Random(7)
    for _ in range(500):
        builder = fuzz_common.InputBuilder()
        script = []
        for _ in range(rng.randrange(1, 20)):
            if rng.random() < 0.5:
                data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 8)))
                builder.bytes(data)
                script.append(("bytes", data))
            else:
                low = rng.choice([0, 1, -3, 1000])
                high = low + rng.choice([0, 1, 3, 7, 255, 256, 65535, 65537, (1 << 63) - 1])
                value = rng.randint(low, high)
                builder.int(value, low, high)
                script.append(("int", value, low, high))
        fdp = fuzz_common.FallbackProvider(builder.build())
        for step in script:
            if step[0] == "bytes":
                assert fdp.ConsumeBytes(len(step[1])) == step[1]
            else:
                assert fdp.ConsumeIntInRange(step[2], step[3]) == step[1]
        assert fdp.remaining_bytes() == 0


@needs_atheris
def test_fallback_provider_reads_like_atheris():
    """A corpus file means the same with and without atheris."""
    rng = random.Random(11)
    for _ in range(3000):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 48)))
        theirs, ours = atheris.FuzzedDataProvider(data), fuzz_common.FallbackProvider(data)
        for _ in range(rng.randrange(1, 24)):
            if rng.random() < 0.6:
                low = rng.choice([0, 1, -5, 100])
                high = low + rng.choice([0, 1, 2, 3, 7, 15, 255, 256, 4096, 65535, 65537, 1 << 31, (1 << 63) - 1])
                assert theirs.ConsumeIntInRange(low, high) == ours.ConsumeIntInRange(low, high), data
            else:
                count = rng.randrange(0, 12)
                assert theirs.ConsumeBytes(count) == ours.ConsumeBytes(count), data
            assert theirs.remaining_bytes() == ours.remaining_bytes()


@needs_atheris
@pytest.mark.slow  # a coverage-guided run of its own process: a short soak
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_short_fuzz_run(name, tmp_path):
    """A bounded atheris run over the committed corpus finds nothing."""
    new_inputs = tmp_path / "new"
    new_inputs.mkdir()
    command = [
        sys.executable, str(FUZZ_DIR / f"{TARGETS[name]}.py"), str(new_inputs), str(CORPUS / name),
        f"-runs={RUNS}", f"-dict={DICTIONARY}", f"-artifact_prefix={tmp_path}/", "-seed=1", "-print_final_stats=1",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    output = done.stdout + done.stderr
    crashes = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-", "leak-")))
    assert done.returncode == 0 and not crashes, f"exit {done.returncode}, artifacts {crashes}:\n{output[-4000:]}"
    final = re.search(r"#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+)", output)
    assert final, output[-2000:]
    assert int(final[1]) >= RUNS
    assert int(final[2]) > 100, "the target barely reaches the code under test: is it instrumented?"


def test_duplicate_key_error_fits_an_error_message():
    """A refusal's text must fit the `error` message that carries it (PROTOCOL.md 6.15: text 512).

    Found by the targets' reportability oracle on the seed corpus (seed-bad-dup-long-key).
    """
    body = b"\x82\xda\x02\x58" + b"k" * 600 + b"\x01\xda\x02\x58" + b"k" * 600 + b"\x02"
    with pytest.raises(ProtocolError) as refused:
        decode_body(body)
    assert len(refused.value.message) <= MAX_TEXT
