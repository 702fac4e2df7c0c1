"""What holds a process's trio loop still: collections by generation, long batches of task steps, and fsyncs.

A measurement aid for load.py --pauses: the host runs under a wrapper that
installs it (so any build of the host can be measured, with nothing in the
host's own code), and the generator installs it in itself.  Each pause is
kept with when it began, on time.perf_counter's clock (CLOCK_MONOTONIC,
shared by every process of the machine), so the figures can be cut to the
measurement window afterwards, and with the CPU time the thread spent in it
(time.thread_time): a pause much longer than its CPU time is the process
waiting for a core, not working.

    collection   from the collector's "start" to its "stop" callback (gc.callbacks)
    batch        the loop's run of task steps between two waits for I/O
                 (trio's before_io_wait and after_io_wait instrument hooks):
                 while it lasts, no socket is read and no timer fires;
                 kept when longer than LONG_BATCH
    fsync        one os.fsync call in the loop's thread (the journal's commits)
    worker fsync one os.fsync call in another thread: the loop is not held
"""

from __future__ import annotations

import gc
import os
import threading
import time
from array import array
from pathlib import Path

import trio

LONG_BATCH = 0.002  # seconds: shorter batches of task steps are not kept


def now() -> tuple[float, float]:
    return time.perf_counter(), time.thread_time()


def since(start: tuple[float, float]) -> tuple[float, float, float]:
    """A pause that began at ``start``: when, how long, and the thread's CPU time in it."""
    wall, cpu = now()
    return start[0], wall - start[0], cpu - start[1]


class Pauses(trio.abc.Instrument):
    def __init__(self) -> None:
        # Each pause as three numbers: when it began, how long it lasted, the CPU time the thread spent in it.
        self.collections = {generation: array("d") for generation in range(3)}
        self.batches = array("d")
        self.fsyncs = array("d")
        self.worker_fsyncs = array("d")
        self._collecting = (0.0, 0.0)
        self._batch_start = (0.0, 0.0)

    def install(self, time_fsync: bool = False) -> Pauses:
        gc.callbacks.append(self._collection)
        self._fsync = fsync = os.fsync
        loop_thread = threading.get_ident()  # installed where trio.run is called
        if time_fsync:

            def timed_fsync(fd: int) -> None:
                start = now()
                try:
                    fsync(fd)
                finally:
                    (self.fsyncs if threading.get_ident() == loop_thread else self.worker_fsyncs).extend(since(start))

            os.fsync = timed_fsync
        return self

    def uninstall(self) -> None:
        gc.callbacks.remove(self._collection)
        os.fsync = self._fsync

    def _collection(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._collecting = now()
        else:
            self.collections[info["generation"]].extend(since(self._collecting))

    def after_io_wait(self, timeout: float) -> None:
        self._batch_start = now()

    def before_io_wait(self, timeout: float) -> None:
        pause = since(self._batch_start)
        if pause[1] > LONG_BATCH and self._batch_start[0]:
            self.batches.extend(pause)

    def dump(self, path: str) -> None:
        with open(path, "w") as out:
            for generation, pairs in self.collections.items():
                out.write(f"gc{generation} {' '.join(map(repr, pairs))}\n")
            out.write(f"batch {' '.join(map(repr, self.batches))}\n")
            out.write(f"fsync {' '.join(map(repr, self.fsyncs))}\n")
            out.write(f"worker-fsync {' '.join(map(repr, self.worker_fsyncs))}\n")

    @classmethod
    def load(cls, path: Path) -> Pauses:
        pauses = cls()
        for line in path.read_text().splitlines():
            kind, *numbers = line.split()
            values = array("d", map(float, numbers))
            if kind.startswith("gc"):
                pauses.collections[int(kind[2:])] = values
            elif kind == "batch":
                pauses.batches = values
            elif kind == "worker-fsync":
                pauses.worker_fsyncs = values
            else:
                pauses.fsyncs = values
        return pauses

    def lines(self, start: float, end: float) -> list[str]:
        """The pauses that began in [start, end): per kind, how many, their total and the longest, in ms."""

        def figures(name: str, triples: array) -> str:
            pauses = sorted(((triples[i + 1], triples[i + 2]) for i in range(0, len(triples), 3)
                             if start <= triples[i] < end), reverse=True)
            if not pauses:
                return f"{name} none"
            top = ", ".join(f"{wall * 1000:.1f} (CPU {cpu * 1000:.1f})" for wall, cpu in pauses[:3])
            return (f"{name} {len(pauses)}, {sum(wall for wall, _ in pauses) * 1000:.0f} ms in all"
                    f" (CPU {sum(cpu for _, cpu in pauses) * 1000:.0f}), longest {top}")

        collections = "; ".join(figures(f"gen {g}", pairs) for g, pairs in self.collections.items())
        out = [f"collections: {collections}", f"{figures(f'batches over {LONG_BATCH * 1000:g} ms', self.batches)}"]
        if self.fsyncs or self.worker_fsyncs:
            out[-1] += f"; {figures('fsyncs in the loop', self.fsyncs)}; {figures('in a worker', self.worker_fsyncs)}"
        return out
