"""agentworld environments as an OpenEnv server (``openenv-core``'s ``Environment``, ``create_app``, ``EnvClient``).

``agentworld serve-openenv agentworld/retail-v0 [MORE_IDS...]`` serves the environments with
OpenEnv's own FastAPI server (``openenv.core.env_server.create_app``): every WebSocket session
(one :class:`AgentWorldClient`, or any ``EnvClient``) gets its own :class:`AgentWorldOpenEnv`,
hence its own episode over its own private SQLite copy. Writes in one session are never seen by
another. Episodes run through :class:`agentworld_envs.env.AgentWorldEnv`, so observations,
error codes and rewards are the Gymnasium env's, byte for byte::

    from agentworld_envs.serving.integrations.openenv_server import AgentWorldAction, AgentWorldClient

    with AgentWorldClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(task_id="retail-021")        # also env_id=, task_index=, seed=
        result.observation.tools                         # the env's OpenAI tool schemas
        result = env.step(AgentWorldAction(tool="find_customer_by_email", arguments={"email": "..."}))
        result = env.step(AgentWorldAction(text='<tool_call>{"name": "submit", "arguments": {}}</tool_call>'))
        result.reward, result.done, result.observation.checks

**Action** (:class:`AgentWorldAction`): ``text`` (one agent turn, as ``AgentWorldEnv.step``
takes it: ``<tool_call>`` blocks, a bare JSON call or an OpenAI assistant message) or ``tool``
plus ``arguments`` (one call), never both.

**Observation** (:class:`AgentWorldObservation`): ``text`` is the gym observation (the policy
and task after reset; a tool's JSON result or ``{"error": {"code", "message"}}`` after a step),
``error`` the first error code, ``tools`` the OpenAI tool schemas (after reset), ``checks`` the
verifier's checks after ``submit``; ``reward`` is 0 until ``submit``, then the verifier's score.

**Episode end:** ``done`` after ``submit`` or the turn limit; then every step answers
``episode_over`` until the session calls ``reset`` again (a new episode, same session).

**Limits** (as the MCP server's): ``--max-turns`` per episode, ``--max-sessions`` live sessions
(OpenEnv refuses one more with its ``CAPACITY_REACHED`` error; a session ends when its client
disconnects), ``--idle-timeout`` closes a session nobody has used for that long. The server
binds to 127.0.0.1 unless ``--host`` says otherwise. A bad ``reset`` (unknown env or task id,
unknown option) is an OpenEnv error response naming what is allowed, never a silent default.

This module imports ``openenv`` at the top: install it with ``pip install 'agentworld[openenv]'``
(``openenv-core``, the distribution that resolves with ``mcp`` 2.x; see docs/integrations.md).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field, model_validator

from ...engine.actions import format_call
from ...env import AgentWorldEnv, error_text
from ...util.errors import UnknownTaskError

__all__ = ["AgentWorldAction", "AgentWorldObservation", "AgentWorldState", "AgentWorldOpenEnv",
           "AgentWorldClient", "make_app", "serve", "DEFAULT_MAX_SESSIONS"]

DEFAULT_MAX_SESSIONS = 256
RESET_KEYS = frozenset({"seed", "episode_id", "env_id", "task_id", "task_index"})


class AgentWorldAction(Action):
    """One agent turn: ``text`` (any action ``AgentWorldEnv.step`` takes) or one ``tool`` call with ``arguments``."""

    text: Optional[str] = Field(default=None, description="the agent's turn as text: <tool_call> blocks, a JSON "
                                "call {name, arguments} or an OpenAI assistant message with tool_calls")
    tool: Optional[str] = Field(default=None, description="the name of one tool to call (instead of text)")
    arguments: Optional[dict[str, Any]] = Field(default=None, description="the tool's arguments (with tool)")

    @model_validator(mode="after")
    def _one_form(self) -> "AgentWorldAction":
        if (self.text is None) == (self.tool is None):
            raise ValueError("give either text or tool (with arguments), not both and not neither")
        if self.arguments is not None and self.tool is None:
            raise ValueError("arguments go with tool")
        return self

    def as_text(self) -> str:
        """The canonical text action ``AgentWorldEnv.step`` takes."""
        if self.text is not None:
            return self.text
        return format_call(self.tool, {} if self.arguments is None else self.arguments)


class AgentWorldObservation(Observation):
    """What the agent sees after ``reset`` or ``step`` (see the module doc)."""

    text: str = Field(default="", description="the gym observation: policy and task after reset, tool result or "
                      "error JSON after a step")
    env_id: str = ""
    task_id: str = ""
    turn: int = 0
    max_turns: int = 0
    error: Optional[str] = Field(default=None, description="the first error code of the step (None: no error)")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI tool schemas (after reset)")
    checks: Optional[list[dict[str, Any]]] = Field(default=None, description="the verifier's checks (after submit)")
    success: Optional[bool] = None
    truncated: bool = False


class AgentWorldState(State):
    """The session's episode: which env and task, turns used, whether it is over and its score."""

    env_id: Optional[str] = None
    task_id: Optional[str] = None
    turn: int = 0
    max_turns: int = 0
    done: bool = True
    score: Optional[float] = None


class AgentWorldOpenEnv(Environment[AgentWorldAction, AgentWorldObservation, AgentWorldState]):
    """One OpenEnv session: its own :class:`AgentWorldEnv` per environment it plays (one live episode).

    Args:
        env_ids: the environments this server offers (``reset(env_id=...)`` picks one; default the first).
        task_id: the default task of ``reset`` (default: the seeded pick).
        seed: the default reset seed.
        max_turns: actions per episode (default: the env's).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session owns its env instances and their SQLite copies

    def __init__(self, env_ids: list[str], task_id: str | None = None, seed: int | None = 0,
                 max_turns: int | None = None):
        super().__init__()
        if not env_ids:
            raise ValueError("serve at least one environment")
        self.env_ids = list(env_ids)
        self.default_task, self.default_seed, self.max_turns = task_id, seed, max_turns
        self._envs: dict[str, AgentWorldEnv] = {}
        self._current: AgentWorldEnv | None = None
        self._state = AgentWorldState()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ OpenEnv API
    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None,
              **kwargs: Any) -> AgentWorldObservation:
        """Start a new episode in this session: ``env_id``, ``task_id`` or ``task_index``, ``seed`` (all optional)."""
        unknown = set(kwargs) - RESET_KEYS
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(map(str, unknown))[:5]}; allowed: "
                             f"{', '.join(sorted(RESET_KEYS))}")
        env_id = kwargs.get("env_id")
        env = self._env(env_id if env_id is not None else self.env_ids[0])
        options: dict[str, Any] = {}
        if kwargs.get("task_id") is not None:
            options["task_id"] = kwargs["task_id"]
        if kwargs.get("task_index") is not None:
            options["task_index"] = kwargs["task_index"]
        if not options and self.default_task is not None and env_id is None:
            options["task_id"] = self.default_task
        with self._lock:
            try:
                obs, info = env.reset(seed=self.default_seed if seed is None else seed, options=options or None)
            except UnknownTaskError:
                ids = env.task_ids
                raise UnknownTaskError(f"{env.bundle.env_id} has no task {str(options.get('task_id'))[:200]!r}; "
                                       f"its {len(ids)} tasks are {', '.join(ids[:3])}, ... (or pass task_index "
                                       f"0..{len(ids) - 1})") from None
            self._current = env
            self._state = AgentWorldState(episode_id=episode_id, step_count=0, env_id=info["env_id"],
                                          task_id=info["task_id"], turn=0, max_turns=info["max_turns"],
                                          done=False, score=None)
        return AgentWorldObservation(text=obs, env_id=info["env_id"], task_id=info["task_id"], turn=0,
                                     max_turns=info["max_turns"], tools=info["tools"], reward=0.0, done=False)

    def step(self, action: AgentWorldAction, timeout_s: Optional[float] = None,
             **kwargs: Any) -> AgentWorldObservation:
        """Run one agent turn in this session's episode (see the module doc)."""
        with self._lock:
            env = self._current
            if env is None:
                text = error_text("episode_over", "no episode yet: call reset() first")
                return AgentWorldObservation(text=text, error="episode_over", reward=0.0, done=True)
            obs, reward, terminated, truncated, info = env.step(action.as_text())
            state = self._state
            state.step_count += 1
            state.turn = info.get("turn", state.turn)
            state.done = bool(terminated or truncated or info.get("error") == "episode_over")
            if terminated or truncated:
                state.score = float(reward)
            return AgentWorldObservation(
                text=obs, env_id=state.env_id or "", task_id=state.task_id or "", turn=state.turn,
                max_turns=state.max_turns, error=info.get("error"), checks=info.get("checks"),
                success=info.get("success"), truncated=bool(truncated), reward=float(reward), done=state.done)

    @property
    def state(self) -> AgentWorldState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        from ... import __version__

        return EnvironmentMetadata(
            name="agentworld", version=__version__,
            description=f"agentworld tool-use environments: {', '.join(self.env_ids[:8])}"
                        + (" ..." if len(self.env_ids) > 8 else ""))

    def close(self) -> None:
        with self._lock:
            for env in self._envs.values():
                env.close()
            self._envs.clear()
            self._current = None

    # ------------------------------------------------------------------ helpers
    def _env(self, env_id: Any) -> AgentWorldEnv:
        import env_registry

        if not isinstance(env_id, str):
            raise TypeError(f"env_id must be a str, not {type(env_id).__name__}")
        canonical = env_id
        if env_id not in self.env_ids:
            try:  # the manifest first: asking for an env this server does not serve builds nothing
                canonical = env_registry.entry(env_id)["id"]
            except env_registry.UnknownEnvError:
                from ...catalogue.catalog import load_bundle

                canonical = load_bundle(env_id).env_id  # a spec registered in this process, or the error
        if canonical not in self.env_ids:
            raise ValueError(f"this server does not serve {env_id[:200]!r}; it serves {', '.join(self.env_ids)}")
        env = self._envs.get(canonical)
        if env is None:
            env = self._envs[canonical] = AgentWorldEnv(canonical, max_turns=self.max_turns)
        return env


class AgentWorldClient(EnvClient[AgentWorldAction, AgentWorldObservation, AgentWorldState]):
    """OpenEnv's ``EnvClient`` for an agentworld server (async; ``.sync()`` for a blocking one)."""

    def _step_payload(self, action: AgentWorldAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AgentWorldObservation]:
        obs = AgentWorldObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                    done=bool(payload.get("done")))
        return StepResult(observation=obs, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> AgentWorldState:
        return AgentWorldState(**payload)


def session_factory(env_ids: list[str], task_id: str | None = None, seed: int | None = 0,
                    max_turns: int | None = None) -> Callable[[], AgentWorldOpenEnv]:
    """The factory OpenEnv calls once per session (ids canonicalised and checked once, here)."""
    import agentworld_envs  # noqa: F401  (registers the ids)

    from ...catalogue.catalog import load_bundle
    from ...util.errors import UnknownTaskError

    canonical = list(dict.fromkeys(load_bundle(i).env_id for i in env_ids))
    if task_id is not None and task_id not in load_bundle(canonical[0]).task_index:
        raise UnknownTaskError(f"{canonical[0]} has no task {task_id[:200]!r}")

    def factory() -> AgentWorldOpenEnv:
        return AgentWorldOpenEnv(canonical, task_id=task_id, seed=seed, max_turns=max_turns)

    factory.__name__ = "AgentWorldOpenEnv"
    return factory


def make_app(env_ids: list[str], task_id: str | None = None, seed: int | None = 0, max_turns: int | None = None,
             max_sessions: int = DEFAULT_MAX_SESSIONS, idle_timeout: float | None = None):
    """The OpenEnv FastAPI app serving ``env_ids`` (``create_app`` with agentworld's action and observation)."""
    factory = session_factory(env_ids, task_id=task_id, seed=seed, max_turns=max_turns)
    return create_app(factory, AgentWorldAction, AgentWorldObservation, env_name="agentworld",
                      concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                           session_timeout=idle_timeout))


def serve(env_ids: list[str], task_id: str | None = None, seed: int | None = 0, host: str = "127.0.0.1",
          port: int = 8000, max_turns: int | None = None, max_sessions: int = DEFAULT_MAX_SESSIONS,
          idle_timeout: float | None = None) -> None:
    """Run the server until the process is stopped."""
    import sys

    import uvicorn

    app = make_app(env_ids, task_id=task_id, seed=seed, max_turns=max_turns, max_sessions=max_sessions,
                   idle_timeout=idle_timeout)
    print(f"agentworld OpenEnv server for {', '.join(env_ids[:4])}{' ...' if len(env_ids) > 4 else ''} "
          f"on http://{host}:{port} (WebSocket /ws)", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")).run()
