"""What the benchmark envs share: text spaces, task selection, the action split, records for the arena.

A benchmark env is a :class:`BenchmarkEnv`: the same text actions as every agentworld env
(``<tool_call>`` blocks, a bare JSON call or an OpenAI assistant message, parsed by
:mod:`agentworld_envs.engine.actions`), the same reset options (``task_id`` / ``task_index``), the
same ``submit`` tool, ``info["tools"]`` as OpenAI schemas, and the methods the arena's env
workers use (:meth:`BenchmarkEnv.solution_actions`, :meth:`BenchmarkEnv.episode_facts`).

**Multi-turn rendering contract.** When an observation is a new user message rather than a
tool result (the first observation, BFCL's next user turn), ``info["observation_role"]`` is
``"user"``; otherwise it is ``"tool"``. A step whose observation comes with new tools (BFCL
miss_func) also sets ``info["tools"]`` to the new full list. Drivers (the arena, the trainer)
render the observation in that role and show those tools from then on.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from ..engine.actions import ActionError, ToolCall, parse_calls
from ..env import chosen_task_index
from ..engine.episode import dumps, error_obj
from ..engine.spaces import UnicodeText

#: ``info["observation_role"]`` values (see the module doc).
USER, TOOL = "user", "tool"


def submit_tool(description: str) -> dict[str, Any]:
    """The ``submit`` tool with a benchmark-specific description (what ending means there)."""
    return {"type": "function", "function": {
        "name": "submit", "description": description,
        "parameters": {"type": "object", "properties": {"answer": {"type": "string", "description": "Your final message."}},
                       "additionalProperties": False}}}


@dataclass
class Action:
    """An action split into the tool calls to run and whether it ends with ``submit`` (and its answer).

    ``error`` is set when the text holds no usable tool call: ``parse_error`` for plain text or a
    malformed call (the benchmarks treat both as the agent talking, not calling), or the parser's
    code for an action it refuses whole (``too_many_calls``, ``action_too_long``)."""

    calls: list[ToolCall] = field(default_factory=list)
    submitted: bool = False
    answer: Any = None
    text: str = ""
    error: str | None = None
    message: str = ""

    @property
    def text_only(self) -> bool:
        return self.error == "parse_error"


#: Most calls one action may carry in a benchmark env. BFCL and τ² put no limit on the calls of one
#: response (BFCL long_context gold turns have up to 34); the action's length limit still bounds them.
MAX_BENCHMARK_CALLS = 256


def split_action(action: Any) -> Action:
    """Parse ``action`` with the engine's parser (up to :data:`MAX_BENCHMARK_CALLS` calls); never raises."""
    # An OpenAI assistant message without tool calls is its content.
    text = action if isinstance(action, str) else (
        action.get("content") or "" if isinstance(action, dict) and isinstance(action.get("content"), str) else "")
    try:
        calls = parse_calls(action, max_calls=MAX_BENCHMARK_CALLS)
    except ActionError as exc:
        return Action(text=text, error=exc.code, message=exc.message)
    out = Action(calls=list(calls), text=text)
    if out.calls and out.calls[-1].name == "submit":
        last = out.calls.pop()
        out.submitted = True
        out.answer = last.arguments.get("answer") if isinstance(last.arguments, dict) else None
    return out


def answer_text(answer: Any) -> str:
    """``submit``'s answer as text (non-strings as JSON)."""
    if answer is None:
        return ""
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


def calls_observation(parts: list[tuple[str | None, Any]]) -> str:
    """One call: its result (or error object). Several: ``[{"tool", "result" | "error"}]`` in order."""
    if len(parts) == 1:
        name, payload = parts[0]
        return payload if isinstance(payload, str) else dumps(payload)
    return dumps([{"tool": n, **(p if isinstance(p, dict) and set(p) == {"error"} else {"result": p})} for n, p in parts])


def refusal(code: str, message: str) -> dict[str, Any]:
    return error_obj(code, message)


def stable_hash(obj: Any) -> str:
    """A short content hash of JSON data (for episode records): the same data gives the same hash anywhere."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class BenchmarkEnv(gym.Env[str, str]):
    """Base of the benchmark envs: spaces, task choice, transcript, the ended-episode guard, arena hooks.

    Subclasses set ``self.env_id``, ``self.suite``, ``self._task_ids`` (the benchmark's own ids, in
    the benchmark's order) and implement ``_reset_task``, ``_step`` and the reference/record hooks.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(self, env_id: str, suite: str, task_ids: list[str], split: str, render_mode: str | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, not {render_mode!r}")
        self.env_id, self.suite, self.split = env_id, suite, split
        self._task_ids = list(task_ids)
        self._task_index = {t: i for i, t in enumerate(self._task_ids)}
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.task_id: str | None = None
        self.turn = 0
        self.done = True
        self.transcript: list[str] = []
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ gymnasium API
    @property
    def task_ids(self) -> list[str]:
        return list(self._task_ids)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        with self._lock:
            super().reset(seed=seed)
            if not self._task_ids:
                raise RuntimeError(f"{self.env_id} has no tasks in split {self.split!r}")
            index = chosen_task_index(self.env_id, self._task_index, len(self._task_ids), options)
            if index is None:
                index = int(self.np_random.integers(len(self._task_ids)))
            self.task_id = self._task_ids[index]
            self.turn, self.done = 0, False
            obs, info = self._reset_task(self.task_id)
            info = {"env_id": self.env_id, "task_id": self.task_id, "split": self.split, "suite": self.suite,
                    "observation_role": USER, **info}
            self.transcript = [obs]
            return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        with self._lock:
            if self.done:
                return dumps(error_obj("episode_over", "the episode has ended; call reset()")), 0.0, True, False, {
                    "tool_name": None, "error": "episode_over", "calls": [], "turn": self.turn,
                    "observation_role": TOOL}
            self.turn += 1
            obs, reward, terminated, truncated, info = self._step(action)
            self.done = terminated or truncated
            info.setdefault("observation_role", TOOL)
            info["turn"] = self.turn
            self.transcript += [str(action)[:2000], obs]
            if self.render_mode == "human":
                self.render()
            return obs, reward, terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode == "human":
            print(self.transcript[-1] if self.transcript else "")
            return None
        return "\n\n".join(self.transcript)

    # ------------------------------------------------------------------ subclass hooks
    def _reset_task(self, task_id: str) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        raise NotImplementedError

    def solution_actions(self) -> list[str]:
        """Text actions replaying the benchmark's gold trajectory for the current task."""
        raise NotImplementedError

    def episode_facts(self) -> dict[str, Any]:
        """What an arena record needs of the ended episode (see ``EnvHost.finish``)."""
        raise NotImplementedError

    @property
    def tools(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def shown_to_spec(self) -> dict[str, str]:
        """Tool names shown -> tool names (the benchmarks' names are shown as they are)."""
        return {t["function"]["name"]: t["function"]["name"] for t in self.tools}
