"""The self-verification gate: a task is kept only if its verifier is shown to be right."""

from __future__ import annotations

import random
from typing import Any

from ..engine.actions import format_call
from ..engine.trajectories import NOOP, near_misses, random_actions
from .contract import given_text_mismatch, public_reasons
from .probes import add_counts, attack
from .runner import Runner

GATE_REASONS = ("reference_fails", "inconsistent_replay", "noop_passes", "random_passes", "no_failing_near_miss",
                "given_text_mismatch", "public_reason", "hack:<probe>", "unfair:<probe>", "too_long", "duplicate",
                "generation_error")


def gate(runner: Runner, task: dict[str, Any], *, seed: int = 0,
         probe_counts: dict[str, dict[str, int]] | None = None) -> str | None:
    """The self-verification gate: ``None`` if the task is kept, else the rejection reason.

    The reference must write every text the instruction gives exactly as given on every write, a
    refusal must need a lookup to explain (no reason made of the instruction's and the rule's own
    words), the reference must score 1.0 from the golden state (twice, reaching the same state hash
    and answer), submitting at once must score 0, random trajectories (the exact ones
    ``agentworld validate`` plays) must score 0, some near-miss must score below 1.0, every hack
    probe must score 0 and every fairness probe 1.0 (:mod:`~agentworld_envs.tasks.probes`;
    the reason is then ``hack:<probe>`` or ``unfair:<probe>``). ``probe_counts``: per-kind counts of the
    probes run are added to it."""
    sol = task["solution"]
    if len(sol) > runner.max_turns:
        return "too_long"
    if given_text_mismatch(task, runner.spec):
        return "given_text_mismatch"   # the reference writes an instruction-given text on some writes only
    if public_reasons(task):
        return "public_reason"         # a refusal the rule text or the instruction alone explains
    first = runner.run(task, sol, hash_state=True)
    if first.score < 1.0:
        return "reference_fails"
    again = runner.run(task, sol, hash_state=True)
    if again.score < 1.0 or again.state_hash != first.state_hash or again.answer != first.answer:
        return "inconsistent_replay"
    if runner.run(task, [NOOP]).score > 0.0:
        return "noop_passes"
    rng = random.Random(f"{seed}:{task['id']}")
    for _ in range(2):  # validation.random_score: trials=2 from one rng
        if runner.run(task, random_actions(runner.tools, runner.value_pool, rng)).score > 0.0:
            return "random_passes"
    if not any(runner.run(task, [format_call(s["name"], s["arguments"]) for s in variant]).score < 1.0
               for variant in near_misses(sol)):
        return "no_failing_near_miss"
    report = attack(runner, task, seed=seed)
    if probe_counts is not None:
        add_counts(probe_counts, report.counts())
    if report.hacks_passed:
        return f"hack:{report.hacks_passed[0]}"
    if report.fair_failed:
        return f"unfair:{report.fair_failed[0]}"
    return None
