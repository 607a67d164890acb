"""The Gymnasium environment: text actions in, tool results out, reward from the verifier."""

from __future__ import annotations

import json
import math
import numbers
import sqlite3
import threading
from typing import Any

import gymnasium as gym

from .engine import state
from .engine.actions import format_call
from .engine.answers import Observed
from .catalogue.catalog import EnvBundle, load_bundle
from .engine.episode import ANSWER_CONTRACT, DEFAULT_MAX_TURNS, SUBMIT_TOOL, Interpreter, dumps, error_obj
from .util.errors import UnknownTaskError
from .catalogue.overlay import merge_tasks, overlay_tasks
from .engine.spaces import UnicodeText
from .engine.verifiers import VerifierContext, run_checks

__all__ = ["AgentWorldEnv", "SUBMIT_TOOL", "DEFAULT_MAX_TURNS", "error_text"]


def error_text(code: str, message: str) -> str:
    return dumps(error_obj(code, message))


RESET_OPTIONS = frozenset({"task_id", "task_index"})


def chosen_task_index(env_id: str, task_index: dict[str, int], n: int, options: Any) -> int | None:
    """The task index ``reset(options=...)`` asks for (None: seeded pick), or a clear error.

    Reset is the one place a Gymnasium env raises on bad input, so a typo'd key, a float index
    or an out-of-range index fails loudly instead of silently wrapping onto another task.
    """
    if options is None:
        return None
    if not isinstance(options, dict):
        raise TypeError(f"reset options must be a dict, not {type(options).__name__}")
    unknown = set(options) - RESET_OPTIONS
    if unknown:
        raise ValueError(f"unknown reset option(s) {sorted(map(str, unknown))}; allowed: task_id, task_index")
    if "task_id" in options and "task_index" in options:
        raise ValueError("give task_id or task_index, not both")
    if "task_id" in options:
        task_id = options["task_id"]
        if not isinstance(task_id, str):
            raise TypeError(f"task_id must be a str, not {type(task_id).__name__}")
        if task_id not in task_index:
            raise UnknownTaskError(f"{env_id} has no task {task_id[:200]!r}; see env.unwrapped.task_ids")
        return task_index[task_id]
    if "task_index" in options:
        index = options["task_index"]
        # numbers.Integral admits numpy integers; bool is an int subclass but never a meaningful index.
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            shown = repr(index) if not (isinstance(index, float) and not math.isfinite(index)) else str(index)
            raise TypeError(f"task_index must be an int, not {type(index).__name__} {shown[:80]}")
        if not 0 <= int(index) < n:
            raise ValueError(f"task_index {int(index)} is out of range: {env_id} has {n} tasks (0..{n - 1})")
        return int(index)
    return None


def _limit(name: str, value: Any) -> int | None:
    """A turn or tool limit: None (the default) or a positive int; anything else is refused."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int or None, not {type(value).__name__} {str(value)[:40]}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int or None, not {int(value)}")
    return int(value)


def needs_policy(task: dict[str, Any]) -> bool:
    """Whether the task's right outcome comes from the policy's rules: a trap, where the agent must
    refuse (or do less than asked) and cite the rule. Without the policy shown it cannot be solved."""
    trap = (task.get("knobs") or {}).get("policy_trap")
    return (trap is not None and trap != "none") or "trap" in (task.get("tags") or ())


class AgentWorldEnv(gym.Env[str, str]):
    """A stateful tool-use environment over a private in-memory SQLite copy.

    Args:
        env_name: registered name (``"retail"``) or id (``"agentworld/retail-v0"``).
        max_turns: actions allowed before the episode is truncated (default: the spec's, else 30).
        obscure_tools: rename tools to neutral ``tool_01``… so the agent must read descriptions.
        max_tools: expose at most this many tools per episode: the ones the task's reference solution
            uses plus seeded distractors (a curriculum knob for small models and short contexts;
            default: every tool).
        render_mode: ``"ansi"`` (``render()`` returns the transcript) or ``"human"`` (prints it).
        task_overlay: path of a task overlay file (:mod:`agentworld_envs.catalogue.overlay`) whose tasks for this
            env are added to its own (``overlay_mode="add"``) or replace them (``"only"``); every process
            that makes the env reads the same file.
        show_policy: put the service policy (rules, answer contract) before the task in the reset
            observation (default). ``False`` shows only the task: about half the prompt tokens, for
            small models on small machines. The tools enforce the rules either way, but a trap task
            (``info["needs_policy"]``: the right outcome is a refusal citing a rule) is unsolvable then.

    **Reset:** ``reset(seed=, options={"task_id": ...} | {"task_index": i})`` picks a task; the
    observation is the policy and the instruction; ``info["tools"]`` holds the OpenAI schemas. Bad
    reset options (an unknown ``task_id``, a ``task_index`` that is not an int in ``[0, len(tasks))``,
    an unknown option key) raise ``KeyError``/``ValueError``/``TypeError`` saying what is allowed.

    **Action:** text with one or more tool calls (``<tool_call>{"name", "arguments"}</tool_call>``
    blocks, a bare JSON call, or an OpenAI assistant message with ``tool_calls``). Several calls
    run in order as one unit, all or nothing: if one fails, the writes of the calls before it are
    rolled back (they report ``rolled_back``) and the calls after it, ``submit`` included, do not run
    (``not_run``); every result comes back. At most 8 calls per action, and a ``submit`` must be
    the last. One action is one turn. A key given twice in a call's JSON and an unclosed
    ``<tool_call>`` are ``parse_error``; control characters other than tab and line breaks in
    text arguments are ``invalid_arguments``.

    **Observation:** the tool's JSON result, or ``{"error": {"code", "message"}}``; for several calls,
    a JSON list of ``{"tool", "result"}`` / ``{"tool", "error"}`` in call order. ``info["error"]`` is
    the failing call's code (None if all succeeded), ``info["calls"]`` lists each call's code.

    **Reward:** 0 until ``submit``; then the task verifier's score, 1.0 iff every check passes
    (the exact state diff, answer, and task checks; ``info["checks"]`` reports each).

    **Episode end:** terminated by ``submit``; truncated (reward 0) after ``max_turns`` actions.

    **Thread safety:** one instance may be stepped from several threads. ``reset``, ``step`` and
    ``verify`` hold a per-instance lock, so calls are serialised and one thread's failed write can
    never roll back another's (each write also runs under its own uniquely named savepoint).
    Interleaving threads still share one episode, so their calls count against one ``max_turns``.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(self, env_name: str, max_turns: int | None = None, obscure_tools: bool = False,
                 render_mode: str | None = None, max_tools: int | None = None,
                 task_overlay: str | None = None, overlay_mode: str = "add", show_policy: bool = True):
        if not isinstance(show_policy, bool):
            raise TypeError(f"show_policy must be a bool, not {type(show_policy).__name__}")
        max_turns, max_tools = _limit("max_turns", max_turns), _limit("max_tools", max_tools)
        self.bundle: EnvBundle = load_bundle(env_name)
        tasks = self.bundle.tasks
        if task_overlay is not None:
            tasks = merge_tasks(tasks, overlay_tasks(task_overlay, self.bundle.name, self.bundle.spec), overlay_mode)
            self._task_index = {t["id"]: i for i, t in enumerate(tasks)}
        else:
            # The bundle's index: building one here would parse every lazily loaded task.
            self._task_index = self.bundle.task_index
        self._tasks = tasks
        spec = self.bundle.head  # the spec's small fields: the full spec of a loaded bundle is parsed on demand
        self.max_turns = max_turns or spec.get("max_turns", DEFAULT_MAX_TURNS)
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.obscure_tools = obscure_tools
        self._display, self._all_real = self.bundle.display_names(obscure_tools)  # shared: never edited
        self._all_schemas = self.bundle.shown_schemas(obscure_tools) + [SUBMIT_TOOL]
        self.max_tools = max_tools
        self._real, self._tool_schemas = self._all_real, self._all_schemas
        self._interpreter = Interpreter(self.bundle.tools, spec["now"], self._real)
        self._policy = spec["policy"]
        self.show_policy = show_policy
        self._conn: sqlite3.Connection | None = None
        self._conn_due = False  # reset() done, private copy not made yet (see ``conn``)
        self.task: dict[str, Any] | None = None
        self.turn = 0
        self.done = True
        self.transcript: list[str] = []
        #: This episode's successful tool results: a refusal's reason must be one a lookup returned.
        self._observed: list[Any] = []
        self._written: list[Any] = []   # the results of its write calls: figures an answer may list as parts
        # Re-entrant: step() calls verify() on submit while holding it.
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ gymnasium API
    @property
    def task_ids(self) -> list[str]:
        return list(self._task_index)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        with self._lock:
            return self._reset(seed, options)

    def _reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        tasks = self._tasks
        if not tasks:
            raise RuntimeError(f"{self.bundle.env_id} has no tasks")
        index = chosen_task_index(self.bundle.env_id, self._task_index, len(tasks), options)
        if index is None:
            index = int(self.np_random.integers(len(tasks)))
        self.task = tasks[index]
        if self.max_tools:
            self._limit_tools(index)
        self._restore_golden_state()
        self.turn, self.done = 0, False
        self._observed, self._written = [], []
        obs = f"# Task\n{self.task['instruction']}"
        if self.show_policy:
            obs = f"# Policy\n{self._policy}\n{ANSWER_CONTRACT}\n\n{obs}"
        self.transcript = [obs]
        info = {
            "env_id": self.bundle.env_id, "task_id": self.task["id"], "split": self.bundle.split,
            "instruction": self.task["instruction"], "tools": list(self._tool_schemas),
            "difficulty": self.task.get("difficulty"), "kind": self.task.get("kind"),
            "max_turns": self.max_turns, "needs_policy": needs_policy(self.task),
        }
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run every tool call of ``action`` in order (see the class docstring)."""
        with self._lock:
            return self._step(action)

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.done or (self._conn is None and not self._conn_due):
            return error_text("episode_over", "the episode has ended; call reset()"), 0.0, True, False, {
                "tool_name": None, "error": "episode_over", "calls": [], "turn": self.turn}
        self.turn += 1
        out = self._interpreter.act(self._conn or self.conn, action)
        self._observed += [c.result for c in out.calls if not c.error]
        self._written += [c.result for c in out.calls if not c.error and self._writes(c.name)]
        reward, terminated = 0.0, out.submitted
        info: dict[str, Any] = {"tool_name": out.tool_name, "error": out.error,
                                "calls": [{"tool_name": c.name, "error": c.error} for c in out.calls]}
        submit_result = None
        if out.submitted:
            reward, checks = self.verify(out.submission)
            submit_result = {"submitted": True, "score": reward, "success": reward >= 1.0}
            answer = out.answer
            info.update(success=reward >= 1.0, score=reward, checks=checks,
                        answer=answer if isinstance(answer, (str, int, float)) or answer is None else json.dumps(answer))
            if not out.calls:
                info["tool_name"] = "submit"
        obs = out.observation(submit_result)
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            info.update(success=False, score=0.0, checks=[])
        self.done = terminated or truncated
        info["turn"] = self.turn
        self.transcript += [str(action)[:2000], obs]
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, truncated, info

    def _writes(self, shown: str | None) -> bool:
        """Did the call of this shown tool name go to a tool that writes?"""
        tool = self.bundle.tools.get(self._real.get(shown or "", ""))
        return tool is not None and tool.writes

    def _limit_tools(self, task_index: int) -> None:
        """Show the reference solution's tools plus distractors drawn with a per-task seed."""
        import random

        names = list(self.bundle.tools)
        needed = [n for n in dict.fromkeys(s["name"] for s in self.task["solution"]) if n in self.bundle.tools]
        rest = [n for n in names if n not in needed]
        random.Random(f"{self.bundle.name}:{task_index}").shuffle(rest)
        shown = set(needed + rest[: max(0, self.max_tools - len(needed))])
        ordered = [n for n in names if n in shown]  # catalogue order, so the solution's tools are not first
        self._real = {self._display[n]: n for n in ordered}
        self._interpreter = Interpreter(self.bundle.tools, self.bundle.head["now"], self._real)
        self._tool_schemas = [self.bundle.tools[n].openai_schema(self._display[n]) for n in ordered] + [SUBMIT_TOOL]

    def _restore_golden_state(self) -> None:
        """Give this episode a pristine copy of the golden state.

        Each episode runs inside one transaction that the next reset rolls back: rolling back
        restores the exact golden pages and keeps SQLite's parsed schema, which a fresh copy
        would re-parse (~1 ms for retail) on its first query. An instance's first episode gets
        its private copy when something first needs it (see :attr:`conn`).
        """
        conn = self._conn
        if conn is not None and conn.in_transaction:
            conn.execute("ROLLBACK")
            conn.execute("BEGIN")
            return
        if conn is not None:
            conn.close()
            self._conn = None
        self._conn_due = True

    @property
    def conn(self) -> sqlite3.Connection | None:
        """This episode's private in-memory database (``None`` before the first reset and after close).

        The first episode of an instance copies the golden state here when something first
        needs it (the first ``step``, :meth:`verify`, or reading this attribute), not in
        ``reset``: a reset that is never stepped (collecting prompts and tool schemas,
        filtering tasks) then costs no copy and holds no database. The copy is ~0.5 ms and the
        golden file's size in memory (retail: 535 KB); later resets roll back instead.
        """
        if self._conn is None and self._conn_due:
            with self._lock:  # one copy however many threads ask
                if self._conn is None and self._conn_due:
                    conn = self.bundle.connect()
                    conn.execute("BEGIN")
                    self._conn, self._conn_due = conn, False
        return self._conn

    def render(self) -> str | None:
        text = "\n\n".join(self.transcript)
        if self.render_mode == "human":
            print(self.transcript[-1] if self.transcript else "")
            return None
        return text

    def close(self) -> None:
        with self._lock:  # never under a step running in another thread (e.g. an MCP eviction)
            if self._conn is not None:
                self._conn.close()
            self._conn, self._conn_due = None, False

    # ------------------------------------------------------------------ helpers for tests, exporters, trainers
    def verify(self, answer: Any) -> tuple[float, list[dict[str, Any]]]:
        """Run the current task's verifier on the current state (does not end the episode).

        ``answer``: ``submit``'s arguments (``{"outcome", "answer", "message"}``), a
        :class:`~agentworld_envs.engine.submission.Submission`, or a bare answer text."""
        with self._lock:
            bundle = self.bundle
            ctx = VerifierContext(final=self.conn, initial=bundle.initial,
                                  initial_table_hashes=bundle.initial_table_hashes, memo=bundle.verifier_memo,
                                  observed=Observed(self._observed, self._written), spec=lambda: bundle.spec)
            return run_checks(self.task, answer, ctx)

    def solution_actions(self) -> list[str]:
        """Text actions that solve the current task (the reference trajectory, ending in submit)."""
        if self.task is None:
            raise RuntimeError("call reset() first")
        return self.actions_for(self.task["solution"])

    def shown_to_spec(self) -> dict[str, str]:
        """The tool names this episode shows, mapped to the spec's names."""
        return dict(self._real)

    def shown_name(self, tool_name: str) -> str:
        """The name the agent sees for a tool (differs from the spec's with ``obscure_tools``)."""
        return self._display.get(tool_name, tool_name)

    def actions_for(self, steps: list[dict[str, Any]]) -> list[str]:
        """Text actions for spec-level calls ``[{"name", "arguments"}, ...]``, in the names this env shows."""
        return [format_call(self.shown_name(s["name"]), s["arguments"]) for s in steps]

    def state_hash(self) -> str:
        """Canonical hash of this episode's current database."""
        return state.state_hash(self.conn)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self._tool_schemas)
