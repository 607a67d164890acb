"""One episode connection per environment, rewound with SAVEPOINT/ROLLBACK between trajectories.

:class:`Runner` replays trajectories through the same :class:`~agentworld_envs.engine.episode.Interpreter`
as :class:`~agentworld_envs.env.AgentWorldEnv` (tool errors are observations, several calls per
action run in order, ``submit`` with bad arguments is not terminal, ``max_turns`` truncates with
reward 0) and scores them with the engine's own :func:`~agentworld_envs.engine.verifiers.run_checks`, but
without deserialising the golden database for each one. The self-verification gate
(:mod:`.gate`) runs on it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..engine import state, statediff
from ..engine.actions import ToolCall, format_call
from ..engine.answers import Observed
from ..engine.episode import DEFAULT_MAX_TURNS, SUBMIT_TOOL, Interpreter
from ..engine.tools import Tool, compile_tool, invoke
from ..engine.trajectories import value_pool
from ..engine.verifiers import VerifierContext, run_checks



def _key(step: Any) -> str:
    """One step as the text action it stands for (a spec-level call and its formatted text are one key)."""
    if isinstance(step, dict) and "name" in step and "arguments" in step and "role" not in step:
        return format_call(step["name"], step["arguments"])
    return step if isinstance(step, str) else json.dumps(step, sort_keys=True, default=str)


@dataclass
class Outcome:
    score: float
    submitted: bool
    answer: Any = None
    submission: Any = None                              # the Submission, when submitted
    results: list[Any] = field(default_factory=list)   # per tool call: result dict or {"error": code}
    changed: list[str] = field(default_factory=list)
    state_hash: str = ""
    checks: list[dict[str, Any]] = field(default_factory=list)
    diff: statediff.Diff | None = None


class Runner:
    """Replays trajectories against one golden state on one connection."""

    def __init__(self, spec: dict[str, Any], golden: bytes, tools: Mapping[str, Tool] | None = None):
        self.spec = spec
        self.now = spec["now"]
        self.max_turns = spec.get("max_turns", DEFAULT_MAX_TURNS)
        self.compiled = tools or {t["name"]: compile_tool(t) for t in spec["tools"]}
        self.interpreter = Interpreter(self.compiled, self.now)
        self.conn = state.episode_connection(golden)
        self.initial = state.episode_connection(golden)
        self.initial.execute("PRAGMA query_only = ON")
        self._hashes: dict[str, str] | None = None
        self._pool: dict[str, dict[str, list[Any]]] | None = None
        self.memo: dict[Any, Any] = {}
        # The state after a run's steps but its last, held open in a savepoint: the gate's probes replay one
        # reference many times with a different ending, and only the ending needs running again.
        self._prefix: list[str] | None = None
        self._prefix_results: list[Any] = []
        self._prefix_seen: list[Any] = []
        self._prefix_wrote: list[Any] = []
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
            self._pool = value_pool(self.spec, self.initial)
        return self._pool

    def close(self) -> None:
        self.conn.close()
        self.initial.close()

    def drop_prefix(self) -> None:
        """Forget the held prefix state (the connection is back at the golden state)."""
        if self._prefix is not None:
            self.conn.execute("ROLLBACK TO aw_prefix")
            self.conn.execute("RELEASE aw_prefix")
            self._prefix, self._prefix_results, self._prefix_seen, self._prefix_wrote = None, [], [], []

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one call on the live connection (inside the caller's savepoint); raises ToolError."""
        self.drop_prefix()
        return invoke(self.conn, self.compiled[name], arguments, self.now)

    def context(self, observed: list[Any] | None = None, wrote: Sequence[Any] = ()) -> VerifierContext:
        return VerifierContext(final=self.conn, initial=self.initial, initial_table_hashes=self.initial_table_hashes,
                               memo=self.memo, observed=None if observed is None else Observed(observed, wrote),
                               spec=self.spec)

    # -------------------------------------------------------------- scoring
    def score(self, task: dict[str, Any], answer: Any, *, full: bool = False,
              observed: list[Any] | None = None, wrote: Sequence[Any] = ()) -> tuple[float, list[dict[str, Any]]]:
        """The verifier's score on the live connection (``observed``: the episode's successful tool
        results; ``wrote``: those of its write calls). Unless ``full``, stops at the first failing check (same score, less work)."""
        return run_checks(task, answer, self.context(observed, wrote), first_failure=not full)

    # -------------------------------------------------------------- trajectories
    def run(self, task: dict[str, Any] | None, steps: list[Any], *, keep: bool = False, hash_state: bool = False,
            diff: bool = False) -> Outcome:
        """Play ``steps`` (dicts ``{name, arguments}`` or text actions) from the golden state.

        The connection is rewound afterwards unless ``keep`` (then call :meth:`rewind`). A run that starts
        with the steps of the held prefix (see ``_prefix``) plays only the rest; the determinism check
        (``hash_state``) always plays every step."""
        start = self._reuse_prefix(steps, fresh=keep or hash_state)
        self.conn.execute("SAVEPOINT episode")
        out = Outcome(0.0, False)
        out.results = list(self._prefix_results) if start else []
        seen: list[Any] = list(self._prefix_seen) if start else []   # successful results, the verifier's evidence
        wrote: list[Any] = list(self._prefix_wrote) if start else []   # the write calls' among them
        try:
            for turn, step in enumerate(steps[start:], start=start + 1):
                act = self.act(step)
                out.results += [c.result if not c.error else {"error": c.error, "message": c.message} for c in act.calls]
                seen += self._successes(act)
                wrote += self._successes(act, writes=True)
                if act.submitted:
                    out.submitted, out.answer, out.submission = True, act.answer, act.submission
                    if task is not None:
                        out.score, out.checks = self.score(task, act.submission, observed=seen, wrote=wrote)
                    break
                if turn >= self.max_turns:
                    break
            out.changed = sorted(state.changed_tables(self.conn))
            if hash_state:  # cheap equivalent of state.state_hash over the written tables
                out.state_hash = str(hash(tuple((t, tuple(self.conn.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall()))
                                                for t in out.changed)))
            if diff:
                out.diff = statediff.diff(self.initial, self.conn)
        finally:
            if not keep:
                self.rewind()
        return out

    def act(self, step: Any):
        """Run one action (a spec-level call or a text action) on the live connection; its outcome."""
        if isinstance(step, dict) and "name" in step and "arguments" in step and "role" not in step:
            return self.interpreter.run_calls(self.conn, [ToolCall(step["name"], step["arguments"])])
        return self.interpreter.act(self.conn, step)

    def _successes(self, act: Any, writes: bool = False) -> list[Any]:
        """The results of an action's successful calls (``writes``: of those to tools that write)."""
        return [c.result for c in act.calls if not c.error
                and (not writes or c.name in self.compiled and self.compiled[c.name].writes)]

    def _reuse_prefix(self, steps: list[Any], fresh: bool) -> int:
        """How many leading steps of ``steps`` the held prefix state already covers (0: none; the
        connection is then at the golden state). Holds a new prefix (every step but the last) when none fits."""
        keys = [_key(s) for s in steps]
        held = self._prefix
        if not fresh and held is not None and keys[:len(held)] == held:
            return len(held)
        self.drop_prefix()
        if fresh or len(steps) < 3 or len(steps) > self.max_turns:
            return 0
        self.conn.execute("SAVEPOINT aw_prefix")
        results: list[Any] = []
        seen: list[Any] = []
        wrote: list[Any] = []
        for step in steps[:-1]:
            act = self.act(step)
            results += [c.result if not c.error else {"error": c.error, "message": c.message} for c in act.calls]
            seen += self._successes(act)
            wrote += self._successes(act, writes=True)
            if act.submitted:   # an early submit ends the episode there: nothing to hold
                self.conn.execute("ROLLBACK TO aw_prefix")
                self.conn.execute("RELEASE aw_prefix")
                return 0
        self._prefix, self._prefix_results, self._prefix_seen, self._prefix_wrote = keys[:-1], results, seen, wrote
        return len(steps) - 1

    def rewind(self) -> None:
        self.conn.execute("ROLLBACK TO episode")
        self.conn.execute("RELEASE episode")
