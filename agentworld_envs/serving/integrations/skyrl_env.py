"""agentworld environments as a SkyRL-gym text environment, registered with ``skyrl_gym.register``.

Importing this module registers the SkyRL-gym id ``"agentworld"`` (:func:`register`); a dataset
row names the environment and task in its extras, so one id serves all 2,000 environments::

    import skyrl_gym
    import agentworld_envs.serving.integrations.skyrl_env  # registers "agentworld"

    env = skyrl_gym.make("agentworld", env_config={}, extras={"env_id": "agentworld/retail-v0",
                                                            "task_id": "retail-021"})
    chat, info = env.init([])              # the prompt plus the policy, task and tools as a user turn
    out = env.step('<tool_call>{"name": "find_customer_by_email", "arguments": {...}}</tool_call>')
    out["observations"], out["reward"], out["done"], out["metadata"]

Rows for a SkyRL dataset (``prompt``, ``env_class``, and the extras) come from
:func:`dataset_rows`. SkyRL's generator passes every other column of a row as ``extras``
(``env_id``, ``task_id`` or ``task_index``, ``seed``, here or inside ``extra_info``) and sets
``extras["max_turns"]``; ``env_config`` is ``environment.skyrl_gym.agentworld`` of its config
(:class:`AgentWorldSkyRLConfig`).

**Action:** the model's text: ``<tool_call>`` blocks (one or more calls), a bare JSON call or an
OpenAI assistant message, exactly as :meth:`AgentWorldEnv.step` takes it. **Observation:** the
tool results (or the error JSON) as one user message. **Reward:** 0 until ``submit``, then the
task verifier's score. **Done:** after ``submit`` or the turn limit (``metadata["truncated"]``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, Mapping

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from ...env import AgentWorldEnv

__all__ = ["AgentWorldSkyRLEnv", "AgentWorldSkyRLConfig", "ENV_CLASS", "register", "dataset_rows", "tools_prompt"]

#: The SkyRL-gym id (a dataset row's ``env_class``).
ENV_CLASS = "agentworld"
ENTRY_POINT = "agentworld_envs.serving.integrations.skyrl_env:AgentWorldSkyRLEnv"
_TASK_KEYS = ("env_id", "task_id", "task_index", "seed")


@dataclass
class AgentWorldSkyRLConfig:
    """``env_config`` knobs (SkyRL: ``environment.skyrl_gym.agentworld.*``).

    Attributes:
        max_turns: actions per episode (default: the generator's ``extras["max_turns"]``, else the env's).
        tools_in_prompt: list the tools (OpenAI schemas, Hermes ``<tools>`` block) in the first user
            turn; turn off when your chat template renders ``metadata["tools"]`` itself.
        show_policy: put the service policy before the task (see :class:`AgentWorldEnv`).
        obscure_tools: rename tools to ``tool_01``... so the agent must read descriptions.
        max_tools: expose at most this many tools (the solution's plus distractors).
    """

    max_turns: int | None = None
    tools_in_prompt: bool = True
    show_policy: bool = True
    obscure_tools: bool = False
    max_tools: int | None = None

    @classmethod
    def from_any(cls, config: Any) -> "AgentWorldSkyRLConfig":
        if config is None:
            return cls()
        if isinstance(config, cls):
            return config
        items = dict(config.items()) if hasattr(config, "items") else dict(vars(config))
        known = {f.name for f in fields(cls)}
        # SkyRL passes its whole per-env block; keys it adds for itself (e.g. env_class) are not ours.
        config_obj = cls(**{k: v for k, v in items.items() if k in known})
        if config_obj.max_turns is not None and (isinstance(config_obj.max_turns, bool) or int(config_obj.max_turns) < 1):
            raise ValueError(f"max_turns must be a positive int, not {config_obj.max_turns!r}")
        return config_obj


def tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The tools as text, in the Hermes/Qwen convention the env's action parser reads back."""
    lines = "\n".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in tools)
    return ("# Tools\n\nYou may call one or more functions to assist with the task. Function signatures are "
            f"within <tools></tools>:\n<tools>\n{lines}\n</tools>\n\nFor each call, reply with "
            '<tool_call>{"name": <function-name>, "arguments": <args-json-object>}</tool_call>. '
            "Call submit once when you are done; it ends the episode.")


def _task_extras(extras: Mapping[str, Any]) -> dict[str, Any]:
    nested = extras.get("extra_info")
    merged: dict[str, Any] = dict(nested) if isinstance(nested, Mapping) else {}
    merged.update({k: extras[k] for k in _TASK_KEYS if extras.get(k) is not None})
    return merged


class AgentWorldSkyRLEnv(BaseTextEnv):
    """One agentworld episode as a SkyRL-gym ``BaseTextEnv`` (see the module doc).

    Args:
        env_config: :class:`AgentWorldSkyRLConfig` fields (a dict, an OmegaConf ``DictConfig`` or the dataclass).
        extras: the dataset row's extras: ``env_id`` (required), ``task_id`` or ``task_index``,
            ``seed`` (top level or inside ``extra_info``), ``max_turns`` (set by SkyRL's generator).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None):
        super().__init__()
        extras = dict(extras or {})
        self.config = AgentWorldSkyRLConfig.from_any(env_config)
        task = _task_extras(extras)
        if not task.get("env_id"):
            raise ValueError("extras must name the environment: {'env_id': 'agentworld/retail-v0', 'task_id': ...}")
        max_turns = self.config.max_turns or extras.get("max_turns") or None
        self.env = AgentWorldEnv(str(task["env_id"]), max_turns=int(max_turns) if max_turns else None,
                                 obscure_tools=self.config.obscure_tools, max_tools=self.config.max_tools,
                                 show_policy=self.config.show_policy)
        self.max_turns = self.env.max_turns
        self._options: dict[str, Any] = {}
        if task.get("task_id") is not None:
            self._options["task_id"] = task["task_id"]
        elif task.get("task_index") is not None:
            self._options["task_index"] = task["task_index"]
        self._seed = task.get("seed")
        self.info: dict[str, Any] = {}
        self._errors = 0
        self._final: dict[str, Any] = {}

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """Start the row's task. Returns the prompt plus one user turn with the policy, the task and
        (``tools_in_prompt``) the tools; nothing is added when the prompt already holds the instruction."""
        obs, info = self.env.reset(seed=None if self._seed is None else int(self._seed), options=self._options or None)
        self.info, self.turns, self._errors, self._final = info, 0, 0, {}
        chat = list(prompt or [])
        if not any(info["instruction"] in str(m.get("content", "")) for m in chat if isinstance(m, Mapping)):
            text = obs + ("\n\n" + tools_prompt(info["tools"]) if self.config.tools_in_prompt else "")
            chat.append({"role": "user", "content": text})
        meta = {k: info[k] for k in ("env_id", "task_id", "split", "kind", "difficulty", "max_turns", "tools")}
        return chat, meta

    def step(self, action: str) -> BaseTextEnvStepOutput:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.turns = info.get("turn", self.turns + 1)
        done = bool(terminated or truncated or info.get("error") == "episode_over")
        self._errors += sum(1 for c in info.get("calls", []) if c.get("error")) or int(bool(info.get("error")))
        metadata = {"env_id": self.info.get("env_id"), "task_id": self.info.get("task_id"), "turn": self.turns,
                    "error": info.get("error"), "calls": info.get("calls", []), "truncated": bool(truncated)}
        if done:
            metadata.update(success=bool(info.get("success")), score=float(reward), checks=info.get("checks", []),
                            observation=obs)
            self._final = {"success": float(bool(info.get("success"))), "score": float(reward)}
        # Like SkyRL's own envs, a finished episode returns no further observation to the model.
        observations = [] if done else [{"role": "user", "content": obs}]
        return BaseTextEnvStepOutput(observations=observations, reward=float(reward), done=done, metadata=metadata,
                                     postprocessed_action=None)

    def get_metrics(self) -> dict[str, Any]:
        return {"turns": self.turns, "tool_errors": self._errors, "success": self._final.get("success", 0.0),
                "score": self._final.get("score", 0.0)}

    def close(self) -> None:
        self.env.close()


def register(env_class: str = ENV_CLASS) -> str:
    """Register :class:`AgentWorldSkyRLEnv` with ``skyrl_gym.register`` under ``env_class`` (idempotent)."""
    from skyrl_gym.envs.registration import register as skyrl_register, registry

    if env_class not in registry:
        skyrl_register(id=env_class, entry_point=ENTRY_POINT)
    return env_class


def dataset_rows(env_ids: list[str], tasks_per_env: int | None = None, system_prompt: str | None = None,
                 env_class: str = ENV_CLASS, env_config: Any = None) -> list[dict[str, Any]]:
    """SkyRL dataset rows, one per (env, task): ``prompt``, ``env_class``, ``env_id``, ``task_id``, ``data_source``.

    The prompt is complete (``system_prompt`` if any, then the user turn :meth:`AgentWorldSkyRLEnv.init`
    would add: policy, task and tools as ``env_config`` renders them), so SkyRL's prompt-length filter
    sees the real length and ``init`` adds nothing. Write them with
    ``datasets.Dataset.from_list(rows).to_parquet(...)`` for SkyRL's ``data.train_data``.
    """
    from ...catalogue.catalog import load_bundle

    rows = []
    for env_id in env_ids:
        bundle = load_bundle(env_id)
        ids = list(bundle.task_index)
        for task_id in ids[:tasks_per_env] if tasks_per_env else ids:
            env = AgentWorldSkyRLEnv(env_config, {"env_id": bundle.env_id, "task_id": task_id})
            system = [{"role": "system", "content": system_prompt}] if system_prompt else []
            prompt, _ = env.init(system)
            env.close()
            rows.append({"data_source": "agentworld", "prompt": prompt, "env_class": env_class,
                         "env_id": bundle.env_id, "task_id": task_id})
    return rows

register()
