"""Small text environments that follow the agentworld env contract.

They exist so the trainer can be developed and tested without the real
``agentworld_envs`` catalogue: same reset/step/info shapes, same tool-call
syntax, same ``task_ids`` / ``solution_actions()`` hooks.

* ``agentworld_rl/toy-bandit-v0``: one turn. The policy's whole reply is the
  answer; reward 1.0 for exactly the target word, 0.5 if the reply contains it.
  Used to prove GRPO raises reward.
* ``agentworld_rl/toy-lookup-v0``: multi-turn tool use. Call ``lookup(key)``,
  then ``submit(answer=value)``; reward 1.0 for the right value.
* ``agentworld_rl/toy-letters-v0``: one turn; reward = the fraction of the reply's characters
  that are lower-case letters. Dense: every group of samples has reward variance, so every
  update moves the weights (used to test multi-process updates and learning).
"""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym
from gymnasium import spaces

TEXT_SPACE_MAX = 1 << 20

_TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def parse_tool_call(text: str) -> tuple[dict | None, str | None]:
    """Parse ``<tool_call>{json}</tool_call>`` (or bare JSON). Returns (call, error_code)."""
    m = _TOOL_CALL_RE.search(text)
    payload = m.group(1) if m else text.strip()
    try:
        call = json.loads(payload)
    except (json.JSONDecodeError, ValueError):
        return None, "parse_error"
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None, "parse_error"
    if not isinstance(call.get("arguments", {}), dict):
        return None, "invalid_arguments"
    call.setdefault("arguments", {})
    return call, None


def _tool(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": props, "required": required}}}


SUBMIT_TOOL = _tool("submit", "Finish the task, optionally with a final answer.",
                    {"answer": {"type": "string", "description": "final answer"}}, [])


class _ToyBase(gym.Env):
    metadata = {"render_modes": []}
    split = "train"

    def __init__(self, max_turns: int = 4):
        self.observation_space = spaces.Text(TEXT_SPACE_MAX)
        self.action_space = spaces.Text(TEXT_SPACE_MAX)
        self.max_turns = max_turns
        self.task_id = self.task_ids[0]
        self.turn = 0

    @property
    def env_id(self) -> str:
        return self.spec.id if self.spec is not None else type(self).__name__

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        options = options or {}
        self.task_id = options.get("task_id") or self.task_ids[int(self.np_random.integers(len(self.task_ids)))]
        if self.task_id not in self.task_ids:
            raise ValueError(f"unknown task_id {self.task_id!r}")
        self.turn = 0
        instruction = self.instruction()
        info = {"env_id": self.env_id, "task_id": self.task_id, "split": self.split,
                "tools": self.tools(), "instruction": instruction}
        return instruction, info

    def _finish_turn(self, obs: str, reward: float, terminated: bool, info: dict):
        self.turn += 1
        truncated = not terminated and self.turn >= self.max_turns
        return obs, float(reward), terminated, truncated, info


class ToyBanditEnv(_ToyBase):
    """Say one specific short word. Single turn, no tools needed."""

    TARGETS = {"t0": "yes", "t1": "yes", "t2": "yes", "t3": "yes"}
    task_ids = list(TARGETS)

    def instruction(self) -> str:
        return "Reply with the magic word."

    def tools(self) -> list[dict]:
        return [SUBMIT_TOOL]

    def solution_actions(self) -> list[str]:
        return [self.TARGETS[self.task_id]]

    def step(self, action: str):
        target = self.TARGETS[self.task_id]
        text = action.strip()
        # Accept a submit tool call too, so the env behaves like the real ones.
        call, _ = parse_tool_call(text)
        if call is not None and call["name"] == "submit":
            text = str(call["arguments"].get("answer", "")).strip()
        reward = 1.0 if text == target else (0.5 if target in text else 0.0)
        info = {"tool_name": "submit", "error": None, "success": reward == 1.0}
        self.turn += 1
        return json.dumps({"score": reward}), reward, True, False, info


class ToyLookupEnv(_ToyBase):
    """Look a key up with a tool, then submit its value."""

    TABLE = {"alpha": "red", "beta": "blue", "gamma": "green", "delta": "gold"}
    task_ids = [f"find-{k}" for k in TABLE]

    def instruction(self) -> str:
        key = self.task_id.removeprefix("find-")
        return f"Find the value stored under key '{key}' with the lookup tool and submit it as the answer."

    def tools(self) -> list[dict]:
        return [_tool("lookup", "Return the value stored under a key.",
                      {"key": {"type": "string"}}, ["key"]), SUBMIT_TOOL]

    def solution_actions(self) -> list[str]:
        key = self.task_id.removeprefix("find-")
        return [
            '<tool_call>\n' + json.dumps({"name": "lookup", "arguments": {"key": key}}) + '\n</tool_call>',
            '<tool_call>\n' + json.dumps({"name": "submit", "arguments": {"answer": self.TABLE[key]}}) + '\n</tool_call>',
        ]

    def step(self, action: str):
        call, err = parse_tool_call(action)
        if err:
            obs = {"error": {"code": err, "message": "could not parse a tool call"}}
            return self._finish_turn(json.dumps(obs), 0.0, False, {"tool_name": None, "error": err})
        name, args = call["name"], call["arguments"]
        if name == "lookup":
            key = args.get("key")
            if not isinstance(key, str):
                obs = {"error": {"code": "invalid_arguments", "message": "key must be a string"}}
                return self._finish_turn(json.dumps(obs), 0.0, False, {"tool_name": name, "error": "invalid_arguments"})
            if key not in self.TABLE:
                obs = {"error": {"code": "precondition_failed", "message": f"no key {key}"}}
                return self._finish_turn(json.dumps(obs), 0.0, False, {"tool_name": name, "error": "precondition_failed"})
            return self._finish_turn(json.dumps({"value": self.TABLE[key]}), 0.0, False, {"tool_name": name, "error": None})
        if name == "submit":
            want = self.TABLE[self.task_id.removeprefix("find-")]
            ok = str(args.get("answer", "")).strip() == want
            self.turn += 1
            return json.dumps({"score": float(ok)}), float(ok), True, False, {"tool_name": name, "error": None, "success": ok}
        obs = {"error": {"code": "unknown_tool", "message": f"no tool {name}"}}
        return self._finish_turn(json.dumps(obs), 0.0, False, {"tool_name": name, "error": "unknown_tool"})


class ToyLettersEnv(_ToyBase):
    """Reply with lower-case letters only. Single turn; reward = their share of the reply's characters."""

    task_ids = ["letters-0", "letters-1", "letters-2", "letters-3"]

    def instruction(self) -> str:
        return "Reply with a few lower-case words."

    def tools(self) -> list[dict]:
        return [SUBMIT_TOOL]

    def solution_actions(self) -> list[str]:
        return ["hello there"]

    def step(self, action: str):
        text = action.strip()
        reward = sum(c.islower() for c in text) / len(text) if text else 0.0
        self.turn += 1
        return json.dumps({"score": reward}), reward, True, False, {"tool_name": "submit", "error": None,
                                                                   "success": reward == 1.0}


TOY_ENV_IDS = {"agentworld_rl/toy-bandit-v0": ToyBanditEnv, "agentworld_rl/toy-lookup-v0": ToyLookupEnv,
               "agentworld_rl/toy-letters-v0": ToyLettersEnv}


def register_toy_envs() -> None:
    for env_id, cls in TOY_ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=f"{__name__}:{cls.__name__}", disable_env_checker=True)


def toy_catalogue() -> list[dict[str, Any]]:
    """Registry-shaped rows for the toy envs (same keys as ``env_registry.select``)."""
    return [{"id": env_id, "name": env_id.split("/")[1].removesuffix("-v0"), "split": "train",
             "l1": "toy", "l2": "toy", "l3": "toy"} for env_id in TOY_ENV_IDS]


register_toy_envs()
