"""Choosing torch's CPU thread count while training runs.

On an idle 2-core box two torch threads run a forward pass faster than one; on a box
where another process keeps a core busy, two threads ran 15x *slower* (they spin at every
barrier waiting for the descheduled one). ``torch_threads: -1`` therefore times a small
matmul with one thread and with every usable core, keeps the faster, and re-checks every
few seconds at safe points (each SFT step, each rollout turn), so a run adapts when other
work starts or stops beside it. A probe costs ~0.1 s.
"""

from __future__ import annotations

import os
import time

import torch


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _probe_seconds(threads: int, reps: int = 2) -> float:
    torch.set_num_threads(threads)
    a, b = torch.randn(256, 576), torch.randn(576, 1536)  # one 135M-model projection, 256 tokens
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(2):
            a @ b
        best = min(best, time.perf_counter() - t0)
    return best


def pick_threads(setting: int) -> int:
    """Apply ``setting`` (>0: fixed, 0: torch's default, -1: the faster of 1 and all cores now); returns it."""
    if setting > 0:
        torch.set_num_threads(setting)
    elif setting == -1:
        cores = usable_cores()
        if cores > 1:
            one, many = _probe_seconds(1), _probe_seconds(cores)
            torch.set_num_threads(cores if many < 0.8 * one else 1)
        else:
            torch.set_num_threads(1)
    return torch.get_num_threads()


class ThreadPicker:
    """``pick_threads(setting)`` at most every ``every_s`` seconds; call ``maybe()`` at safe points."""

    def __init__(self, setting: int, every_s: float = 10.0):
        self.setting, self.every_s = setting, every_s
        self._last = -float("inf")

    def maybe(self) -> None:
        if self.setting == -1 and time.monotonic() - self._last >= self.every_s:
            pick_threads(self.setting)
            self._last = time.monotonic()

    def now(self) -> int:
        """Pick now, whatever the interval (fixed settings are applied too)."""
        n = pick_threads(self.setting)
        self._last = time.monotonic()
        return n
