"""agentworld environments as TRL ``GRPOTrainer(environment_factory=...)`` environments.

TRL (1.16) probes one instance per factory, exposes every public method of its *class*
(except ``reset`` and ``get_reward``) as a tool, builds the tool schemas with
``transformers.utils.get_json_schema`` (type hints + Google-style docstrings), calls
``reset(**row)`` with each dataset row before a rollout, runs tool calls as
``method(**arguments)`` and, when the class defines ``get_reward()``, adds it as a reward.

Tools therefore differ per environment, so each env id gets its own generated class::

    from agentworld_envs.serving.trl_adapter import environment_factories, task_rows
    factories = environment_factories(["agentworld/retail-v0", "agentworld/other-v0"])
    dataset = datasets.Dataset.from_list(task_rows(factories))      # rows carry "environment"
    GRPOTrainer(model, args=cfg, train_dataset=dataset, environment_factory=factories)

(one env: ``environment_factory=agentworld_env_class("agentworld/retail-v0")`` and rows
without an ``environment`` column). Tool calls go through ``AgentWorldEnv.step`` with the
canonical text action, so validation and error observations are exactly the gym env's.
"""

from __future__ import annotations

import functools
import inspect
import json
import keyword
import re
import typing
from typing import Any, Iterable, Literal, Mapping, Sequence

from ..engine.actions import format_call
from ..env import SUBMIT_TOOL, AgentWorldEnv

_RESERVED = {"reset", "get_reward"}
_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool,
                               "null": type(None), "object": dict}
_SCALARS = (str, int, float, bool, type(None))
_SECTION = re.compile(r"\b(Args|Returns|Raises):")


def _hint(schema: Any) -> Any:
    """A Python type hint that transformers' ``get_json_schema`` turns back into (most of) ``schema``."""
    if not isinstance(schema, dict):
        return Any
    if "enum" in schema and schema["enum"] and all(isinstance(v, _SCALARS) for v in schema["enum"]):
        return Literal[tuple(schema["enum"])]
    if "const" in schema and isinstance(schema["const"], _SCALARS):
        return Literal[schema["const"]]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            hints = tuple(dict.fromkeys(_hint(s) for s in schema[key]))
            return hints[0] if len(hints) == 1 else typing.Union[hints]
    kind = schema.get("type")
    if isinstance(kind, list):
        hints = tuple(dict.fromkeys(_hint({**schema, "type": k}) for k in kind))
        return hints[0] if len(hints) == 1 else typing.Union[hints]
    if kind == "array":
        items = schema.get("items")
        return list[_hint(items)] if isinstance(items, dict) and items else list
    return _JSON_TYPES.get(kind, Any)


def _one_line(text: Any) -> str:
    return _SECTION.sub(r"\1 -", " ".join(str(text or "").split()))


def _arg_doc(name: str, schema: Any) -> str:
    schema = schema if isinstance(schema, dict) else {}
    desc = _one_line(schema.get("description")) or f"The {name} argument."
    # Constraints a type hint cannot carry (ranges, formats, nested shapes) go into the text.
    extra = {k: v for k, v in schema.items() if k not in ("description", "type", "enum", "title")
             and not (k == "items" and isinstance(v, dict) and set(v) <= {"type"})}
    if extra:
        desc += " Constraints: " + json.dumps(extra, ensure_ascii=False, separators=(",", ":"))
    return desc


def _param_name(name: str) -> str:
    return name if name.isidentifier() and not keyword.iskeyword(name) else re.sub(r"\W", "_", name) + "_"


def _tool_method(schema: dict[str, Any]):
    """A method ``name(self, *, arg: T, ...) -> str`` with a Google docstring, calling the env."""
    fn = schema["function"]
    name, params = fn["name"], fn.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    required = set(params.get("required") or [])
    py_names = {p: _param_name(p) for p in props}
    back = {v: k for k, v in py_names.items() if v != k}

    def method(self, **kwargs: Any) -> str:
        return self._call(name, {back.get(k, k): v for k, v in kwargs.items()})

    sig_params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    # Required first, so the order reads naturally; all keyword-only, so any order is legal.
    for prop in sorted(props, key=lambda p: p not in required):
        hint = _hint(props[prop])
        annotations[py_names[prop]] = hint
        sig_params.append(inspect.Parameter(py_names[prop], inspect.Parameter.KEYWORD_ONLY, annotation=hint,
                                            default=inspect.Parameter.empty if prop in required else None))
    annotations["return"] = str
    lines = [_one_line(fn.get("description")) or name]
    if props:
        lines += ["", "Args:"] + [f"    {py_names[p]}: {_arg_doc(p, props[p])}"
                                  for p in sorted(props, key=lambda p: p not in required)]
    lines += ["", "Returns:", "    The tool result as JSON text, or an error object explaining what to fix."]
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "\n".join(lines)
    method.__signature__ = inspect.Signature(sig_params, return_annotation=str)
    method.__annotations__ = annotations
    return method


class AgentWorldTRLEnv:
    """Base class of the per-environment classes made by :func:`agentworld_env_class`.

    Public methods of a subclass are exactly: ``reset``, ``get_reward`` and one method per tool
    (incl. ``submit``), as TRL expects. State lives in underscore attributes.
    """

    env_id: str = ""
    max_turns: int | None = None
    #: Reward of an episode that ends without ``submit``: 0.0 (as a truncated gym episode), or,
    #: when True, the verifier's score of the final state with no answer.
    score_unsubmitted: bool = False

    def __init__(self) -> None:
        if not self.env_id:
            raise TypeError("use agentworld_env_class(env_id) to make an environment class")
        self._env = AgentWorldEnv(self.env_id, max_turns=self.max_turns)
        self._task_id: str | None = None
        self._reward: float | None = None
        self._submit_info: dict[str, Any] | None = None
        self._calls: list[dict[str, Any]] = []
        self._resets = 0

    # ------------------------------------------------------------------ TRL protocol
    def reset(self, **row: Any) -> str | None:
        """Start the episode a dataset row names (``env_id``/``environment``, ``task_id`` or ``task_index``, ``seed``).

        Returns the observation (policy and task) for TRL to append to the prompt, or ``None``
        when the row's prompt already contains the task instruction.
        """
        wanted = row.get("env_id") or row.get("environment")
        if wanted and _canonical(wanted) != self.env_id:
            raise ValueError(f"row is for {wanted!r} but this environment is {self.env_id!r}; "
                             "use environment_factories(...) and an 'environment' column to mix environments")
        options: dict[str, Any] = {}
        if row.get("task_id") is not None:
            options["task_id"] = row["task_id"]
        elif row.get("task_index") is not None:
            options["task_index"] = int(row["task_index"])
        seed = row.get("seed")
        obs, info = self._env.reset(seed=None if seed is None else int(seed), options=options or None)
        self._task_id = info["task_id"]
        self._reward, self._submit_info, self._calls = None, None, []
        self._resets += 1
        if _prompt_has(row.get("prompt"), info["instruction"]):
            return None
        return obs

    def get_reward(self) -> float:
        """The verifier's score of this episode (0.0 if it ended without ``submit``, unless ``score_unsubmitted``)."""
        if self._reward is not None:
            return self._reward
        if self.score_unsubmitted and self._env.conn is not None and self._env.task is not None:
            return float(self._env.verify(None)[0])
        return 0.0

    # ------------------------------------------------------------------ helpers (private: not tools)
    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        obs, reward, terminated, truncated, info = self._env.step(format_call(name, arguments))
        self._calls.append({"tool": name, "error": info.get("error"), "turn": info.get("turn")})
        if terminated and info.get("tool_name") == "submit":
            self._reward = float(reward)
            self._submit_info = {k: info.get(k) for k in ("score", "success", "checks", "answer")}
        return obs

    @property
    def task_id(self) -> str | None:
        return self._task_id

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Tool calls that reached the env this episode: ``{"tool", "error", "turn"}``."""
        return list(self._calls)

    @property
    def resets(self) -> int:
        return self._resets

    @property
    def submit_info(self) -> dict[str, Any] | None:
        return self._submit_info

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The env's own (OpenAI-style) schemas, richer than what TRL derives from the methods."""
        return self._env.tools


def _canonical(env_id: str) -> str:
    from ..catalogue.catalog import load_bundle

    return load_bundle(env_id).env_id


def _prompt_has(prompt: Any, instruction: str) -> bool:
    if isinstance(prompt, str):
        return instruction in prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        content = prompt[-1].get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return isinstance(content, str) and instruction in content
    return False


@functools.lru_cache(maxsize=None)
def agentworld_env_class(env_id: str, max_turns: int | None = None, score_unsubmitted: bool = False,
                         tools: tuple[str, ...] | None = None) -> type[AgentWorldTRLEnv]:
    """The TRL environment class of ``env_id`` (itself a valid ``environment_factory``).

    ``tools`` exposes only those tools (``submit`` is always included), e.g. to keep prompts short
    for small models; the env itself is unchanged.
    """
    import agentworld_envs  # noqa: F401  (registers ids)
    from ..catalogue.catalog import load_bundle

    bundle = load_bundle(env_id)
    if tools is not None:
        unknown = set(tools) - set(bundle.tools) - {"submit"}
        if unknown:
            raise KeyError(f"{bundle.env_id} has no tools {sorted(unknown)}")
    schemas = [t.openai_schema() for n, t in bundle.tools.items() if tools is None or n in tools] + [SUBMIT_TOOL]
    namespace: dict[str, Any] = {"env_id": bundle.env_id, "max_turns": max_turns,
                                 "score_unsubmitted": score_unsubmitted,
                                 "__doc__": f"{bundle.env_id} as a TRL environment: {bundle.spec.get('title', '')}"}
    for schema in schemas:
        name = schema["function"]["name"]
        if name in _RESERVED or name.startswith("_") or name in vars(AgentWorldTRLEnv):
            raise ValueError(f"{bundle.env_id}: tool {name!r} clashes with the TRL environment protocol")
        namespace[name] = _tool_method(schema)
    cls_name = "AgentWorld_" + re.sub(r"\W", "_", bundle.name)
    return type(cls_name, (AgentWorldTRLEnv,), namespace)


def environment_factories(env_ids: Iterable[str], max_turns: int | None = None, score_unsubmitted: bool = False,
                          tools: Mapping[str, Sequence[str]] | None = None) -> dict[str, type[AgentWorldTRLEnv]]:
    """``{env id: class}`` for ``GRPOTrainer(environment_factory=...)``; rows select one by ``environment``.

    ``tools`` optionally maps an env id to the subset of its tools to expose.
    """
    out = {}
    for env_id in env_ids:
        canonical = _canonical(env_id)
        subset = (tools or {}).get(env_id) or (tools or {}).get(canonical)
        cls = agentworld_env_class(canonical, max_turns, score_unsubmitted, tuple(subset) if subset else None)
        out[cls.env_id] = cls
    return out


def task_rows(env_ids: Iterable[str] | Mapping[str, Any], tasks_per_env: int | None = None,
              task_ids: Mapping[str, Sequence[str]] | None = None, system_prompt: str | None = None,
              environment_column: bool = True) -> list[dict[str, Any]]:
    """Dataset rows ``{"environment", "env_id", "task_id", "prompt"}``, one per task.

    The prompt is an empty user turn (plus ``system_prompt``): ``reset`` returns the policy and
    task, which TRL appends to it. Drop ``environment`` (``environment_column=False``) for a
    single-class ``environment_factory``.
    """
    from ..catalogue.catalog import load_bundle

    rows = []
    for env_id in env_ids:
        bundle = load_bundle(env_id)
        ids = list((task_ids or {}).get(env_id) or (task_ids or {}).get(bundle.env_id) or
                   [t["id"] for t in bundle.tasks])
        for task_id in ids[:tasks_per_env] if tasks_per_env else ids:
            prompt = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + \
                     [{"role": "user", "content": ""}]
            row = {"env_id": bundle.env_id, "task_id": task_id, "prompt": prompt}
            if environment_column:
                row = {"environment": bundle.env_id, **row}
            rows.append(row)
    return rows


def agentworld_reward(environments: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
    """A TRL reward function: each rollout's verifier score (``None`` for non-agentworld envs).

    The generated classes already define ``get_reward``, which TRL adds as a reward by itself
    (one column per environment class). Use this instead when you want a single reward
    column, by passing ``reward_funcs=[agentworld_reward]`` with
    :func:`environment_factories(..., )` classes whose ``get_reward`` you do not want counted
    twice — e.g. via :func:`without_env_reward`.
    """
    if environments is None:
        raise ValueError("agentworld_reward needs TRL's `environments` argument (use environment_factory)")
    return [AgentWorldTRLEnv.get_reward(e) if isinstance(e, AgentWorldTRLEnv) else None for e in environments]


def without_env_reward(factories: Mapping[str, type[AgentWorldTRLEnv]]) -> dict[str, type]:
    """Copies of ``factories`` whose classes hide ``get_reward`` from TRL (pair with ``agentworld_reward``)."""
    out = {}
    for key, cls in factories.items():
        # TRL looks for get_reward among the class's *functions*; a staticmethod-free
        # non-function attribute hides it, while AgentWorldTRLEnv.get_reward stays usable.
        out[key] = type(cls.__name__, (cls,), {"get_reward": property(lambda self: None)})
    return out
