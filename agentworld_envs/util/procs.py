"""Worker pools whose processes never outlive the command that started them.

``agentworld build --jobs N`` and ``agentworld validate --jobs N`` fan out over a
:class:`~concurrent.futures.ProcessPoolExecutor`. Left alone, killing the parent (SIGTERM,
SIGINT, a crash) orphans its workers, which keep building until their task ends and then block
forever. :func:`worker_pool` prevents that three ways:

* while the pool is open, SIGTERM in the parent raises ``SystemExit(143)`` so cleanup runs;
* on any exception leaving the ``with`` block (SIGINT's ``KeyboardInterrupt`` included), pending
  work is cancelled and the pool's workers are terminated (then killed if they linger);
* on Linux each worker asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``),
  which covers a parent killed with SIGKILL, where no Python code runs.

Workers ignore SIGINT: a Ctrl-C reaches the whole process group, and the parent alone decides.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")
_PR_SET_PDEATHSIG = 1


def _worker_init(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked worker inherits the parent's raising handler
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the parent's cleanup still applies
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _raise_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _stop(workers: set[multiprocessing.process.BaseProcess]) -> None:
    for proc in workers:
        proc.terminate()
    for proc in workers:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5)
        # The pool's manager thread reaps its workers too. When it wins that race, our join
        # returns at once and ``is_alive()`` stays True until that thread records the exit
        # code, a moment later (1 run in ~8 of tests/test_faults_procs.py looked like a leak).
        # The process is gone once its sentinel is ready: wait for the record, briefly.
        deadline = time.monotonic() + 2.0
        while proc.is_alive() and time.monotonic() < deadline and multiprocessing.connection.wait([proc.sentinel], 0):
            time.sleep(0.005)


@contextmanager
def worker_pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` of ``jobs`` workers that are stopped whenever the block is left early."""
    before = set(multiprocessing.active_children())
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_on_sigterm) if in_main else None
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init, initargs=(os.getpid(),))
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        # Only this pool's workers: other multiprocessing children of the process are not ours to stop.
        _stop(set(multiprocessing.active_children()) - before)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def ordered_map(fn: Callable[[T], R], items: Iterable[T], jobs: int) -> Iterator[R]:
    """``map(fn, items)`` over :func:`worker_pool` workers, results in input order, one item per task."""
    with worker_pool(jobs) as pool:
        yield from pool.map(fn, items, chunksize=1)
