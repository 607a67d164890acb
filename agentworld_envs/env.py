"""The Gymnasium environment: text actions in, tool results out, reward from the verifier."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

from . import state
from .actions import format_call
from .catalog import EnvBundle, load_bundle
from .episode import ANSWER_CONTRACT, DEFAULT_MAX_TURNS, SUBMIT_TOOL, Interpreter, dumps, error_obj
from .overlay import merge_tasks, overlay_tasks
from .spaces import UnicodeText
from .verifiers import VerifierContext, run_checks

__all__ = ["AgentWorldEnv", "SUBMIT_TOOL", "DEFAULT_MAX_TURNS", "error_text"]


def error_text(code: str, message: str) -> str:
    return dumps(error_obj(code, message))


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
        task_overlay: path of a task overlay file (:mod:`agentworld_envs.overlay`) whose tasks for this
            env are added to its own (``overlay_mode="add"``) or replace them (``"only"``); every process
            that makes the env reads the same file.

    **Reset:** ``reset(seed=, options={"task_id": ...} | {"task_index": i})`` picks a task; the
    observation is the policy and the instruction; ``info["tools"]`` holds the OpenAI schemas.

    **Action:** text with one or more tool calls (``<tool_call>{"name", "arguments"}</tool_call>``
    blocks, a bare JSON call, or an OpenAI assistant message with ``tool_calls``). Several calls
    run in order, each atomically, and every result comes back; at most 8 per action, and a
    ``submit`` must be the last. One action is one turn.

    **Observation:** the tool's JSON result, or ``{"error": {"code", "message"}}``; for several calls,
    a JSON list of ``{"tool", "result"}`` / ``{"tool", "error"}`` in call order. ``info["error"]`` is
    the first error code (None if all succeeded), ``info["calls"]`` lists each call's code.

    **Reward:** 0 until ``submit``; then the task verifier's score, 1.0 iff every check passes
    (the exact state diff, answer, and task checks; ``info["checks"]`` reports each).

    **Episode end:** terminated by ``submit``; truncated (reward 0) after ``max_turns`` actions.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(self, env_name: str, max_turns: int | None = None, obscure_tools: bool = False,
                 render_mode: str | None = None, max_tools: int | None = None,
                 task_overlay: str | None = None, overlay_mode: str = "add"):
        self.bundle: EnvBundle = load_bundle(env_name)
        tasks = self.bundle.tasks
        if task_overlay is not None:
            tasks = merge_tasks(tasks, overlay_tasks(task_overlay, self.bundle.name), overlay_mode)
        self._tasks = tasks
        self._task_index = {t["id"]: i for i, t in enumerate(tasks)}
        spec = self.bundle.spec
        self.max_turns = max_turns or spec.get("max_turns", DEFAULT_MAX_TURNS)
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.obscure_tools = obscure_tools
        names = list(self.bundle.tools)
        self._display = {n: (f"tool_{i + 1:02d}" if obscure_tools else n) for i, n in enumerate(names)}
        self._all_real = {d: n for n, d in self._display.items()}
        self._all_schemas = [t.openai_schema(self._display[n]) for n, t in self.bundle.tools.items()] + [SUBMIT_TOOL]
        self.max_tools = max_tools
        self._real, self._tool_schemas = self._all_real, self._all_schemas
        self._interpreter = Interpreter(self.bundle.tools, spec["now"], self._real)
        self._policy = spec["policy"]
        self.conn = None
        self.task: dict[str, Any] | None = None
        self.turn = 0
        self.done = True
        self.transcript: list[str] = []

    # ------------------------------------------------------------------ gymnasium API
    @property
    def task_ids(self) -> list[str]:
        return [t["id"] for t in self._tasks]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        tasks = self._tasks
        if not tasks:
            raise RuntimeError(f"{self.bundle.env_id} has no tasks")
        if "task_id" in options:
            if options["task_id"] not in self._task_index:
                raise KeyError(f"{self.bundle.env_id} has no task {options['task_id']!r}")
            index = self._task_index[options["task_id"]]
        elif "task_index" in options:
            index = int(options["task_index"]) % len(tasks)
        else:
            index = int(self.np_random.integers(len(tasks)))
        self.task = tasks[index]
        if self.max_tools:
            self._limit_tools(index)
        self._restore_golden_state()
        self.turn, self.done = 0, False
        obs = f"# Policy\n{self._policy}\n{ANSWER_CONTRACT}\n\n# Task\n{self.task['instruction']}"
        self.transcript = [obs]
        info = {
            "env_id": self.bundle.env_id, "task_id": self.task["id"], "split": self.bundle.split,
            "instruction": self.task["instruction"], "tools": list(self._tool_schemas),
            "difficulty": self.task.get("difficulty"), "kind": self.task.get("kind"),
            "max_turns": self.max_turns,
        }
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run every tool call of ``action`` in order (see the class docstring)."""
        if self.done or self.conn is None:
            return error_text("episode_over", "the episode has ended; call reset()"), 0.0, True, False, {
                "tool_name": None, "error": "episode_over", "calls": [], "turn": self.turn}
        self.turn += 1
        out = self._interpreter.act(self.conn, action)
        reward, terminated = 0.0, out.submitted
        info: dict[str, Any] = {"tool_name": out.tool_name, "error": out.error,
                                "calls": [{"tool_name": c.name, "error": c.error} for c in out.calls]}
        submit_result = None
        if out.submitted:
            reward, checks = self.verify(out.answer)
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
        self._interpreter = Interpreter(self.bundle.tools, self.bundle.spec["now"], self._real)
        self._tool_schemas = [self.bundle.tools[n].openai_schema(self._display[n]) for n in ordered] + [SUBMIT_TOOL]

    def _restore_golden_state(self) -> None:
        """Give this episode a pristine copy of the golden state.

        The first episode of an instance deserialises the golden bytes into a private
        in-memory database; each episode then runs inside one transaction that the next
        reset rolls back. Rolling back restores the exact golden pages and keeps SQLite's
        parsed schema, which a fresh copy would re-parse (~1 ms for retail) on its first query.
        """
        if self.conn is not None and self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        else:
            if self.conn is not None:
                self.conn.close()
            self.conn = state.episode_connection(self.bundle.golden)
        self.conn.execute("BEGIN")

    def render(self) -> str | None:
        text = "\n\n".join(self.transcript)
        if self.render_mode == "human":
            print(self.transcript[-1] if self.transcript else "")
            return None
        return text

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # ------------------------------------------------------------------ helpers for tests, exporters, trainers
    def verify(self, answer: Any) -> tuple[float, list[dict[str, Any]]]:
        """Run the current task's verifier on the current state (does not end the episode)."""
        ctx = VerifierContext(final=self.conn, initial=self.bundle.initial,
                              initial_table_hashes=self.bundle.initial_table_hashes, memo=self.bundle.verifier_memo)
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
