"""One episode connection per environment, rewound with SAVEPOINT/ROLLBACK between trajectories.

:class:`Runner` replays trajectories with the same semantics as
:class:`~agentworld_envs.env.AgentWorldEnv` (tool errors are observations, ``submit``
with bad arguments is not terminal, ``max_turns`` truncates with reward 0) and scores
them with the engine's own :func:`~agentworld_envs.verifiers.run_checks`, but without
deserialising the golden database for each one. The self-verification gate runs on it.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from .. import state
from ..spec import content_hash as _content_hash
from ..actions import ActionError, parse_action
from ..env import DEFAULT_MAX_TURNS, SUBMIT_TOOL
from ..tools import Tool, ToolError, compile_tool, invoke
from ..verifiers import VerifierContext, run_checks


@dataclass
class Outcome:
    score: float
    submitted: bool
    answer: Any = None
    results: list[Any] = field(default_factory=list)   # per tool call: result dict or {"error": code}
    changed: list[str] = field(default_factory=list)
    state_hash: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)


class Runner:
    """Replays trajectories against one golden state on one connection."""

    def __init__(self, spec: dict[str, Any], golden: bytes, tools: dict[str, Tool] | None = None):
        self.spec = spec
        self.now = spec["now"]
        self.max_turns = spec.get("max_turns", DEFAULT_MAX_TURNS)
        self.compiled = tools or {t["name"]: compile_tool(t) for t in spec["tools"]}
        self.conn = state.episode_connection(golden)
        self.initial = state.episode_connection(golden)
        self.initial.execute("PRAGMA query_only = ON")
        self._hashes: dict[str, str] | None = None
        self._pool: dict[str, dict[str, list[Any]]] | None = None
        # what validation.random_actions sees as env.tools (real names, submit last)
        self.tools = [t.openai_schema() for t in self.compiled.values()] + [SUBMIT_TOOL]

    # -------------------------------------------------------------- helpers
    @property
    def initial_table_hashes(self) -> dict[str, str]:
        if self._hashes is None:
            self._hashes = {t: state.table_hash(self.initial, t) for t in state.user_tables(self.initial)}
        return self._hashes

    @property
    def value_pool(self) -> dict[str, dict[str, list[Any]]]:
        if self._pool is None:
            from ..validation import value_pool

            self._pool = value_pool(self.spec, self.initial)
        return self._pool

    def close(self) -> None:
        self.conn.close()
        self.initial.close()

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one call on the live connection (inside the caller's savepoint); raises ToolError."""
        return invoke(self.conn, self.compiled[name], arguments, self.now)

    # -------------------------------------------------------------- scoring
    def score(self, task: dict[str, Any], answer: Any, *, full: bool = False) -> tuple[float, list[dict[str, Any]]]:
        """The verifier's score on the live connection. Unless ``full``, stops at the first failing check
        (same score, less work: a footprint check hashes whole tables)."""
        ctx = VerifierContext(final=self.conn, initial=self.initial, initial_table_hashes=self.initial_table_hashes)
        if full:
            return run_checks(task, answer, ctx)
        results = []
        for check in task["checks"]:
            _, res = run_checks({**task, "checks": [check]}, answer, ctx)
            results += res
            if not res[0]["passed"]:
                return 0.0, results
        return 1.0, results

    # -------------------------------------------------------------- trajectories
    def run(self, task: dict[str, Any] | None, steps: list[Any], *, keep: bool = False, hash_state: bool = False) -> Outcome:
        """Play ``steps`` (dicts ``{name, arguments}`` or text actions) from the golden state.

        The connection is rewound afterwards unless ``keep`` (then call :meth:`rewind`)."""
        self.conn.execute("SAVEPOINT episode")
        out = Outcome(0.0, False)
        try:
            for turn, step in enumerate(steps, start=1):
                if isinstance(step, str):
                    try:
                        call = parse_action(step)
                    except ActionError as exc:
                        out.results.append({"error": exc.code})
                        continue
                    name, args = call.name, call.arguments
                else:
                    name, args = step["name"], step["arguments"]
                if name == "submit":
                    if not isinstance(args, dict) or set(args) - {"answer"}:
                        out.results.append({"error": "invalid_arguments"})
                    else:
                        out.submitted, out.answer = True, args.get("answer")
                        if task is not None:
                            out.score, out.checks = self.score(task, out.answer)
                        break
                elif name not in self.compiled:
                    out.results.append({"error": "unknown_tool"})
                else:
                    try:
                        out.results.append(self.call(name, args))
                    except ToolError as exc:
                        out.results.append({"error": exc.code, "message": exc.message})
                    except Exception as exc:  # noqa: BLE001 - mirrors the env: internal errors are observations
                        out.results.append({"error": "internal_error", "message": str(exc)[:200]})
                if turn >= self.max_turns:
                    break
            out.changed = sorted(state.changed_tables(self.conn))
            if hash_state:  # cheap equivalent of state.state_hash over the written tables
                out.state_hash = str(hash(tuple((t, tuple(self.conn.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall()))
                                                for t in out.changed)))
        finally:
            if not keep:
                self.rewind()
        return out

    def rewind(self) -> None:
        self.conn.execute("ROLLBACK TO episode")
        self.conn.execute("RELEASE episode")


# ------------------------------------------------------------------------------------------ gate


GATE_REASONS = ("reference_fails", "inconsistent_replay", "noop_passes", "random_passes", "no_failing_near_miss",
                "too_long", "duplicate", "generation_error")


def gate(runner: Runner, task: dict[str, Any], *, seed: int = 0) -> str | None:
    """The self-verification gate: ``None`` if the task is kept, else the rejection reason.

    The reference must score 1.0 from the golden state (twice, reaching the same state hash
    and answer), submitting at once must score 0, random trajectories (the exact ones
    ``agentworld validate`` plays) must score 0, and some near-miss must score below 1.0."""
    from ..actions import format_call
    from ..validation import NOOP, near_misses, random_actions

    sol = task["solution"]
    if len(sol) > runner.max_turns:
        return "too_long"
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
        if runner.run(task, random_actions(runner, rng)).score > 0.0:
            return "random_passes"
    for variant in near_misses(sol):
        if runner.run(task, [format_call(s["name"], s["arguments"]) for s in variant]).score < 1.0:
            return None
    return "no_failing_near_miss"
