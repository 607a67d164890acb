"""Intervals for success rates and for gains between two evaluations of the same tasks."""

from __future__ import annotations

import math
from typing import Sequence

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95 % Wilson score interval of a success rate (well behaved at 0/n and n/n, unlike the normal one)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_gain(before: Sequence[float], after: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """Mean of ``after - before`` over the same tasks and its 95 % interval.

    A normal interval on the paired differences (tasks both runs solve, or both fail, add no
    spread), whose variance is estimated with one pseudo-task gained and one lost added, so a
    small evaluation where every task agrees does not claim a zero-width interval.
    Returns (gain, low, high).
    """
    if len(before) != len(after):
        raise ValueError("paired_gain needs the same tasks on both sides")
    n = len(before)
    if n == 0:
        return 0.0, -1.0, 1.0
    d = [float(a) - float(b) for a, b in zip(after, before)]
    mean = sum(d) / n
    aug = d + [1.0, -1.0]
    m = sum(aug) / len(aug)
    var = sum((x - m) ** 2 for x in aug) / (len(aug) - 1)
    half = z * math.sqrt(var / n)
    return mean, mean - half, mean + half
