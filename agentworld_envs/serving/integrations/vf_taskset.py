"""agentworld environments as a Prime Intellect ``verifiers`` v1 taskset (``verifiers`` 0.4: ``import verifiers.v1 as vf``).

``vf-eval agentworld-verifiers`` evaluates it (the taskset id is the top-level package
``agentworld_verifiers``, which re-exports :class:`AgentWorldTaskset` and its harness in
``__all__``: verifiers resolves a taskset id ``owner/name@version`` to the module ``name``).
Pick environments under ``--env.taskset.*``::

    vf-eval agentworld-verifiers --env.taskset.envs '["agentworld/retail-v0"]' -n 5 --model ...
    vf-eval agentworld-verifiers --env.taskset.category healthcare --env.taskset.split arena ...

* **Tasks:** one :class:`AgentWorldTask` per (environment, task); its prompt is the env's reset
  observation (service policy, answer contract, task), its id ``"<env id>/<task id>"``.
* **Tools:** :class:`AgentWorldToolset`, a ``vf.Toolset`` launched per rollout (its own process,
  hence its own episode and private SQLite copy). It serves the env's own tools, ``submit``
  included, under their own names with the env's JSON Schemas (``info["tools"]``, never a
  hard-coded list), and passes each call's raw arguments to :meth:`AgentWorldEnv.step`, so
  validation, error observations and writes are exactly the Gymnasium env's.
* **Reward:** ``verifier`` (weight 1.0) is the task verifier's score at ``submit`` (0.0 for a
  rollout that never submits), carried from the tool server to the task in the rollout's
  ``vf.State``; a ``@vf.stop`` ends the rollout once the episode is over (``submit`` or the
  env's turn limit). Metrics: ``submitted``, ``turns``, ``tool_errors``.
* **Harness:** :class:`AgentWorldHarness` is verifiers' tool-calling chat harness without bash
  (the default for this taskset; pick another with ``--env.agent.harness.id``).

``mcp``: verifiers 0.4 pins ``mcp==2.0.0`` and serves toolsets with that SDK's ``MCPServer``.
This adapter uses only that (through ``vf.Toolset``), never agentworld's own MCP server
(:mod:`agentworld_envs.serving.mcp_server`, which needs ``mcp>=2.3``), so ``pip install
'agentworld[verifiers]'`` resolves as long as the suite itself does not require ``mcp``.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Literal

import verifiers.v1 as vf
from pydantic import Field, model_validator
from verifiers.v1.harnesses.null import NullHarness, NullHarnessConfig

from ...engine.actions import format_call
from ...env import AgentWorldEnv

__all__ = ["AgentWorldTaskset", "AgentWorldTasksetConfig", "AgentWorldTask", "AgentWorldTaskConfig",
           "AgentWorldData", "AgentWorldState", "AgentWorldToolset", "AgentWorldToolsetConfig",
           "AgentWorldHarness", "AgentWorldHarnessConfig", "AgentWorldEvalEnv", "AgentWorldEnvConfig",
           "select_env_ids"]


class AgentWorldState(vf.State):
    """The rollout's episode as the tool server reports it (the task reads its reward here)."""

    env_id: str | None = None
    task_id: str | None = None
    turns: int = 0
    tool_errors: int = 0
    done: bool = False
    submitted: bool = False
    truncated: bool = False
    score: float | None = None
    checks: list[dict[str, Any]] = Field(default_factory=list)


class AgentWorldData(vf.TaskData):
    """One (environment, task): which episode the tool server starts."""

    env_id: str
    task_id: str
    split: str | None = None
    kind: str | None = None
    difficulty: float | None = None
    max_turns: int | None = None


class AgentWorldToolsetConfig(vf.ToolsetConfig):
    pass


class AgentWorldToolset(vf.Toolset[AgentWorldToolsetConfig, AgentWorldState]):
    """One episode's tools, served over MCP by verifiers (see the module doc)."""

    TOOL_PREFIX = None  # the env's own tool names, unprefixed

    def __init__(self, config: AgentWorldToolsetConfig) -> None:
        super().__init__(config)
        self.env: AgentWorldEnv | None = None

    async def setup_task(self, task: AgentWorldData) -> None:
        import agentworld_envs  # noqa: F401  (registers the ids)

        self.env = AgentWorldEnv(task.env_id, max_turns=task.max_turns)
        self.env.reset(options={"task_id": task.task_id})

    def register(self, mcp: Any) -> None:
        if self.env is None:
            raise vf.ToolsetError("the agentworld toolset serves one task; it was started without one")
        schemas = {s["function"]["name"]: s["function"] for s in self.env.tools}
        for name, fn in schemas.items():
            mcp.add_tool(self._with_state(self._tool(name)), name=name, description=fn.get("description") or name)
        advertised = mcp.list_tools

        async def list_tools() -> list[Any]:
            # The SDK derives a schema from the (argument-free) function; advertise the env's own.
            tools = await advertised()
            return [t.model_copy(update={"input_schema": schemas[t.name].get("parameters") or
                                         {"type": "object", "properties": {}}}) if t.name in schemas else t
                    for t in tools]

        mcp.list_tools = list_tools

    def _tool(self, name: str) -> Any:
        """The MCP function of tool ``name``: it takes only the request context and reads the raw arguments.

        The SDK's argument model of such a function is empty and lets every argument through, so
        the env's own JSON-Schema check decides on unknown, missing and mistyped arguments alike.
        """
        from mcp.server.mcpserver import Context

        async def call(ctx: Context) -> str:
            params = ctx.request_context.params or {}
            return self._call(name, params.get("arguments"))

        call.__name__ = call.__qualname__ = name
        call.__annotations__ = {"ctx": Context, "return": str}  # resolved here: the SDK reads them
        return call

    def _call(self, name: str, arguments: Any) -> str:
        env = self.env
        assert env is not None
        obs, reward, terminated, truncated, info = env.step(format_call(name, {} if arguments is None else arguments))
        state = self.state
        state.env_id, state.task_id = env.bundle.env_id, env.task["id"] if env.task else None
        state.turns = int(info.get("turn", state.turns))
        state.tool_errors += bool(info.get("error"))
        state.done = bool(env.done)
        if terminated or truncated:
            state.submitted = bool(terminated and info.get("tool_name") == "submit")
            state.truncated = bool(truncated)
            state.score = float(reward)
            state.checks = json.loads(json.dumps(info.get("checks", []), default=str))
        return obs


class AgentWorldTaskConfig(vf.TaskConfig):
    tools: AgentWorldToolsetConfig = AgentWorldToolsetConfig()


class AgentWorldTask(vf.Task[AgentWorldData, AgentWorldState, AgentWorldTaskConfig]):
    """One agentworld episode: its tools, its verifier as the reward, a stop once it is over."""

    @property
    def key(self) -> str:
        return self.data.id or f"{self.data.env_id}/{self.data.task_id}"

    @classmethod
    def toolsets(cls, config: AgentWorldTaskConfig) -> list[vf.Toolset]:
        return [AgentWorldToolset(config.tools)]

    @vf.stop
    async def episode_over(self, trace: vf.Trace) -> bool:
        """After ``submit`` or the turn limit every tool call fails: no model turn can change the score."""
        return bool(trace.state.done)

    @vf.reward(weight=1.0)
    async def verifier(self, trace: vf.Trace) -> float:
        """The task verifier's score at ``submit`` (exact state diff, answer, task checks); 0.0 without one."""
        return float(trace.state.score or 0.0) if trace.state.submitted else 0.0

    @vf.metric
    async def submitted(self, trace: vf.Trace) -> float:
        return float(trace.state.submitted)

    @vf.metric
    async def turns(self, trace: vf.Trace) -> float:
        return float(trace.state.turns)

    @vf.metric
    async def tool_errors(self, trace: vf.Trace) -> float:
        return float(trace.state.tool_errors)


class AgentWorldTasksetConfig(vf.TasksetConfig):
    """Which environments and tasks (``--env.taskset.*``); with none of ``envs``/``category``/``split``: retail-v0."""

    envs: list[str] = Field(default_factory=list)
    """Environment ids or names (``agentworld/retail-v0``, ``retail``)."""
    category: str | None = None
    """A first-level category slug (``agentworld list``): every env in it."""
    split: Literal["train", "arena"] | None = None
    """Only environments of this split (``arena``: the held-out ones)."""
    tasks_per_env: int | None = Field(default=None, ge=1)
    """At most this many tasks per environment (in the env's order)."""
    task_ids: list[str] = Field(default_factory=list)
    """Only these task ids (e.g. ``retail-021``)."""
    max_turns: int | None = Field(default=None, ge=1)
    """Tool calls per episode (default: each env's)."""
    show_policy: bool = True
    """Put the service policy before the task in the prompt (trap tasks need it)."""
    task: AgentWorldTaskConfig = AgentWorldTaskConfig()

    @model_validator(mode="after")
    def _known(self) -> "AgentWorldTasksetConfig":
        select_env_ids(self)  # unknown ids or categories fail here, at config time, in one line
        return self


def select_env_ids(config: AgentWorldTasksetConfig) -> list[str]:
    """The canonical env ids ``config`` selects (manifest order); ValueError for an unknown id or category."""
    import env_registry

    if not (config.envs or config.category or config.split):
        return ["agentworld/retail-v0"]
    try:
        entries = env_registry.select(ids=config.envs or None, l1=config.category, split=config.split)
    except KeyError as exc:
        raise ValueError(str(exc)) from None
    if config.category and not env_registry.select(l1=config.category):
        known = sorted({e["l1"] for e in env_registry.manifest()})
        raise ValueError(f"category {config.category!r} matches no environment; known: {', '.join(known)}")
    if not entries:
        raise ValueError("the selection (envs, category, split) matches no environment")
    return list(dict.fromkeys(e["id"] for e in entries))


class AgentWorldTaskset(vf.Taskset[AgentWorldTask, AgentWorldTasksetConfig]):
    """One :class:`AgentWorldTask` per (environment, task) of the selected environments."""

    def load(self) -> Iterator[AgentWorldTask]:
        import agentworld_envs  # noqa: F401  (registers the ids)

        config = self.config
        wanted, found = set(config.task_ids), set()
        for env_id in select_env_ids(config):
            env = AgentWorldEnv(env_id, max_turns=config.max_turns, show_policy=config.show_policy)
            ids = [t for t in env.task_ids if not wanted or t in wanted]
            found.update(ids)
            for task_id in ids[:config.tasks_per_env] if config.tasks_per_env else ids:
                obs, info = env.reset(options={"task_id": task_id})
                yield AgentWorldTask(AgentWorldData(
                    id=f"{info['env_id']}/{task_id}", name=f"{info['env_id']}/{task_id}", prompt=obs,
                    env_id=info["env_id"], task_id=task_id, split=info["split"], kind=info["kind"],
                    difficulty=info["difficulty"], max_turns=config.max_turns), config.task)
            env.close()
        if wanted - found:  # a typo'd task id must not turn into a silently smaller evaluation
            raise ValueError(f"task_ids matched no task of the selected environments: {sorted(wanted - found)[:5]}")


class AgentWorldHarnessConfig(NullHarnessConfig):
    pass


class AgentWorldHarness(NullHarness):
    """verifiers' chat harness (model + MCP tools, no bash): the default harness of this taskset."""


class AgentWorldEnvConfig(vf.SingleAgentEnvConfig):
    """``SingleAgentEnv``'s config with the harness run locally by default (``--env.agent.runtime.type``).

    An agentworld episode needs no sandbox: its tool server holds a private in-memory database,
    and the chat harness only talks to the model and that server. verifiers' own default is a
    Prime sandbox, which needs a Prime account; pick it (or docker) explicitly if you want one.
    """

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class AgentWorldEvalEnv(vf.Env[AgentWorldEnvConfig]):
    """The single-agent env of this taskset (one ``agent`` seat), with :class:`AgentWorldEnvConfig`."""

    async def run(self, task: AgentWorldTask, agents: vf.Agents) -> None:
        await agents.agent.run(task)


if __name__ == "__main__":  # verifiers starts each rollout's tool server as `python -m <this module>`
    AgentWorldToolset.run()
