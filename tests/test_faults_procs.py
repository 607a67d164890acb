"""Killing a parallel build or validate stops its worker processes too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from agentworld_envs.util.procs import ordered_map


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _start_and_kill(argv: list[str], sig: int, tmp_path) -> tuple[int | None, list[psutil.Process]]:
    env = {**os.environ, "AGENTWORLD_CACHE": str(tmp_path / "cache")}
    # a suite started in the background (`nohup … &`) ignores SIGINT, and a child would inherit that: the child
    # gets the default disposition, as a build started from a terminal has
    proc = subprocess.Popen([sys.executable, "-m", "agentworld_envs.cli", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    parent = psutil.Process(proc.pid)
    workers: list[psutil.Process] = []
    deadline = time.monotonic() + 90
    try:
        while len(workers) < 2:  # both pool workers have started
            if proc.poll() is not None:
                pytest.fail(f"{argv} exited ({proc.returncode}) before its workers started")
            if time.monotonic() > deadline:
                pytest.fail("the workers did not start within 90 s")
            workers = parent.children(recursive=True)
            time.sleep(0.1)
        time.sleep(1.0)  # let them get busy
        workers = parent.children(recursive=True)
        os.kill(proc.pid, sig)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        gone_by = time.monotonic() + 15
        while _alive(workers) and time.monotonic() < gone_by:
            time.sleep(0.2)
        return code, _alive(workers)
    finally:
        for p in _alive(workers):  # never leave strays behind, even when the assertion fails
            p.kill()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"])
def test_killing_build_stops_its_workers(sig, tmp_path):
    code, survivors = _start_and_kill(["build", "--l1", "healthcare", "--jobs", "2"], sig, tmp_path)
    assert code is not None and code != 0, "the parent must stop, with a failure status"
    assert not survivors, f"workers survived: {[p.pid for p in survivors]}"


def test_killing_validate_stops_its_workers(tmp_path):
    code, survivors = _start_and_kill(["validate", "--l1", "healthcare", "--jobs", "2"], signal.SIGTERM, tmp_path)
    assert code is not None and code != 0
    assert not survivors, f"workers survived: {[p.pid for p in survivors]}"


def _square(x: int) -> int:
    return x * x


def test_ordered_map_keeps_order_and_leaves_no_children():
    import multiprocessing

    before = set(multiprocessing.active_children())
    assert list(ordered_map(_square, range(7), jobs=2)) == [x * x for x in range(7)]
    assert set(multiprocessing.active_children()) <= before


def test_abandoning_ordered_map_stops_its_workers():
    import multiprocessing

    before = set(multiprocessing.active_children())
    results = ordered_map(time.sleep, [0.0] + [30.0] * 4, jobs=2)
    next(results)
    t0 = time.monotonic()
    results.close()  # GeneratorExit inside the pool: must not wait for the 30 s sleeps
    assert time.monotonic() - t0 < 15
    assert not [p for p in multiprocessing.active_children() if p not in before and p.is_alive()]
