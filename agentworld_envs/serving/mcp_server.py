"""Serve one agentworld episode over the Model Context Protocol (stdio or streamable HTTP).

``agentworld serve-mcp agentworld/retail-v0 --task retail-001`` (or
``python -m agentworld_envs.serving.mcp_server agentworld/retail-v0 ...``) exposes:

* ``tools/list``: the environment's tools with their JSON Schemas, plus ``submit`` and
  ``get_task`` (the task instruction and policy; does not use a turn);
* ``tools/call``: runs the call through :meth:`AgentWorldEnv.step` with the canonical text
  action, so argument validation and error text are exactly the Gymnasium env's; errors come
  back with ``isError: true``. ``submit`` ends the episode and returns the verifier's score
  as structured content ``{"score", "success", "checks", "answer"}``;
* resource ``agentworld://task``: the same text as ``get_task``.

Every MCP session gets its own episode (its own private database): one per process on
stdio, one per ``Mcp-Session-Id`` over HTTP. Over HTTP at most ``--max-sessions`` episodes
(default 256) stay live; opening one more closes the least recently used, and that session's
next call fails with ``isError: true`` and code ``session_evicted`` (never a silent fresh
episode): its client must open a new MCP session. After ``submit`` (or the turn limit) every
call fails with ``episode_over``; a new episode needs a new MCP session (stdio: a new server).
Over HTTP the server advertises only the session-based (handshake) protocol versions in
``server/discover``, so ``mode="auto"`` clients negotiate a session; sessionless 2026-07-28
requests get an error result.
HTTP binds to 127.0.0.1 by default (with the SDK's DNS-rebinding protection).

The low-level ``mcp.server.lowlevel.Server`` is used on purpose: it does not validate
arguments itself, so every check happens in our engine, exactly as in the gym env.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional

import typer

TASK_URI = "agentworld://task"
GET_TASK_TOOL = "get_task"
STDIO_KEY = "stdio"
DEFAULT_MAX_SESSIONS = 256
#: Evicted session ids remembered so their next call is refused rather than given a fresh episode.
#: Bounded (ids are ~40 bytes) so a client churning sessions cannot grow the server without limit.
MAX_EVICTED_REMEMBERED = 65536
EPISODE_OVER_MESSAGE = ("this session's episode has ended (submitted or out of turns); to start a new episode, "
                        "open a new MCP session (reconnect; over stdio, start the server again). "
                        "get_task still shows the task.")


class SessionEvicted(Exception):
    """The episode of an MCP session was closed to respect ``max_sessions``."""


@dataclass
class Episode:
    """One live episode: the env, its reset info and its per-episode call counter."""

    env: Any
    info: dict[str, Any]
    observation: str
    calls: int = 0
    result: dict[str, Any] | None = field(default=None)  # set by submit


class EpisodeHost:
    """Owns the episodes of one server: one :class:`AgentWorldEnv` per MCP session key.

    Args:
        env_id: registered id or name (``"agentworld/retail-v0"``, ``"retail"``).
        task_id: task to serve (default: the seeded pick of ``reset(seed=seed)``).
        seed: reset seed (default 0), so every session of a server sees the same task.
        max_turns: the env's turn limit (default: the spec's).
        max_sessions: live episodes kept; the least recently used is closed beyond this.
    """

    def __init__(self, env_id: str, task_id: str | None = None, seed: int | None = 0,
                 max_turns: int | None = None, max_sessions: int = DEFAULT_MAX_SESSIONS):
        import agentworld_envs  # noqa: F401  (registers the ids)
        from ..catalogue.catalog import load_bundle

        self.bundle = load_bundle(env_id)
        self.env_id = self.bundle.env_id
        if task_id is not None and task_id not in self.bundle.task_index:
            from ..util.errors import UnknownTaskError

            raise UnknownTaskError(f"{self.env_id} has no task {task_id!r}")
        self.task_id, self.seed, self.max_turns = task_id, seed, max_turns
        self.max_sessions = max_sessions
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        self._evicted: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        probe = self._new_episode()
        self.tool_schemas: list[dict[str, Any]] = probe.env.tools
        self._writes = {n: t.writes for n, t in self.bundle.tools.items()}
        self.observation = probe.observation
        self.task_info = {k: probe.info[k] for k in ("env_id", "task_id", "split", "instruction", "max_turns")}
        probe.env.close()

    # ------------------------------------------------------------------ episodes
    def _new_episode(self) -> Episode:
        from ..env import AgentWorldEnv

        env = AgentWorldEnv(self.env_id, max_turns=self.max_turns)
        options = {"task_id": self.task_id} if self.task_id is not None else None
        obs, info = env.reset(seed=self.seed, options=options)
        return Episode(env=env, info=info, observation=obs)

    def episode(self, key: str) -> Episode:
        """The live episode of session ``key`` (created on first use); :class:`SessionEvicted` if it was evicted."""
        with self._lock:
            if key in self._evicted:
                raise SessionEvicted(key)
            ep = self._episodes.get(key)
            if ep is None:
                ep = self._episodes[key] = self._new_episode()
                while len(self._episodes) > self.max_sessions:
                    old_key, old = self._episodes.popitem(last=False)
                    old.env.close()
                    self._evicted[old_key] = None
                    while len(self._evicted) > MAX_EVICTED_REMEMBERED:
                        self._evicted.popitem(last=False)
            self._episodes.move_to_end(key)
            return ep

    def evicted_text(self) -> str:
        from ..env import error_text

        return error_text("session_evicted", (
            f"this MCP session's episode was closed: the server keeps at most {self.max_sessions} live episodes "
            "(--max-sessions) and this session was the least recently used, so its progress is lost. "
            "Open a new MCP session (reconnect) to start a fresh episode."))

    def close_episode(self, key: str) -> None:
        with self._lock:
            ep = self._episodes.pop(key, None)
        if ep is not None:
            ep.env.close()

    @property
    def live_episodes(self) -> int:
        return len(self._episodes)

    # ------------------------------------------------------------------ MCP-independent call path
    def task_text(self) -> str:
        return self.observation

    def call(self, key: str, name: str, arguments: Any) -> tuple[str, bool, dict[str, Any] | None]:
        """Run one tool call in the episode of ``key``: ``(text, is_error, structured)``.

        The call goes through ``AgentWorldEnv.step`` with the canonical ``<tool_call>`` text,
        so validation and error observations are byte-identical to the Gymnasium env's.
        """
        from ..engine.actions import format_call

        if name == GET_TASK_TOOL and GET_TASK_TOOL not in self._writes:
            # Every session of a server has the same task: reading it needs no episode (an evicted
            # session can still read it), and it never makes one.
            return json.dumps({**self.task_info, "task": self.observation}, ensure_ascii=False), False, None
        try:
            ep = self.episode(key)
        except SessionEvicted:
            return self.evicted_text(), True, None
        action = format_call(name, {} if arguments is None else arguments)
        obs, reward, terminated, truncated, info = ep.env.step(action)
        ep.calls += 1
        if info.get("error") == "episode_over":
            # The gym text says "call reset()", which an MCP client cannot do.
            from ..env import error_text

            return error_text("episode_over", EPISODE_OVER_MESSAGE), True, None
        if info.get("error"):
            return obs, True, None
        if info.get("tool_name") == "submit":
            structured = {"score": float(reward), "success": bool(info.get("success")),
                          "checks": info.get("checks", []),
                          "answer": arguments.get("answer") if isinstance(arguments, dict) else None,
                          "task_id": ep.info["task_id"], "turns": info.get("turn")}
            ep.result = structured
            return obs, False, json.loads(json.dumps(structured, default=str))
        if truncated:
            return obs, False, {"truncated": True, "score": 0.0, "success": False}
        return obs, False, None

    def mcp_tools(self) -> list[dict[str, Any]]:
        """Tool definitions as plain dicts: name, description, inputSchema, annotations."""
        out = []
        for schema in self.tool_schemas:
            fn = schema["function"]
            writes = self._writes.get(fn["name"])
            annotations = ({"readOnlyHint": not writes, "destructiveHint": bool(writes), "idempotentHint": not writes,
                            "openWorldHint": False} if writes is not None else {"readOnlyHint": False, "openWorldHint": False})
            out.append({"name": fn["name"], "description": fn["description"], "inputSchema": fn["parameters"],
                        "annotations": annotations})
        if GET_TASK_TOOL not in self._writes:
            out.append({"name": GET_TASK_TOOL, "description": "Read the task instruction and the policy to follow "
                        "(does not use a turn).", "inputSchema": {"type": "object", "properties": {},
                                                                   "additionalProperties": False},
                        "annotations": {"readOnlyHint": True, "openWorldHint": False}})
        return out


# ---------------------------------------------------------------------- the MCP server
def _session_key(ctx: Any, transport: str) -> str | None:
    if transport == "stdio":
        return STDIO_KEY
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    if headers is not None:
        sid = headers.get("mcp-session-id")
        if sid:
            return sid
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    return getattr(connection, "session_id", None)


def _register_cleanup(ctx: Any, host: EpisodeHost, key: str) -> None:
    """Close the session's episode when its MCP connection closes (best effort; LRU caps the rest)."""
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    if getattr(connection, "session_id", None) != key:
        return  # stdio, or a per-request connection: its teardown is not the session's end
    state = getattr(connection, "state", None)
    stack = getattr(connection, "exit_stack", None)
    if state is None or stack is None or state.get("agentworld_cleanup"):
        return
    state["agentworld_cleanup"] = True
    stack.callback(host.close_episode, key)


def build_server(host: EpisodeHost, transport: str = "stdio"):
    """The low-level MCP server for ``host`` (tools, the task resource, per-session episodes)."""
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    tools = [types.Tool.model_validate(t) for t in host.mcp_tools()]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        key = _session_key(ctx, transport)
        if key is None:
            from ..env import error_text

            text = error_text("no_session", "this server keeps one episode per MCP session; connect with the "
                                            "session handshake (the SDK's default mode='auto' does)")
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        _register_cleanup(ctx, host, key)
        text, is_error, structured = host.call(key, params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured,
                                    is_error=is_error)

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(
            uri=TASK_URI, name="task", title=f"{host.env_id} task {host.task_info['task_id']}",
            description="The task instruction and the policy to follow.", mime_type="text/markdown")])

    async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        from mcp.shared.exceptions import MCPError

        if str(params.uri) != TASK_URI:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {str(params.uri)[:200]!r}")
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=TASK_URI, mime_type="text/markdown", text=host.task_text())])

    server = Server(
        "agentworld", version=_version(), title=f"agentworld {host.env_id}",
        instructions=host.task_text() + "\n\nCall `submit` once when done; it ends the episode and returns the score.",
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    if transport == "http":
        # Sessionless (2026-07-28) HTTP requests could not be told apart, so advertise only the
        # session-based versions: mode="auto" clients then fall back to the initialize handshake.
        async def discover(ctx, params) -> types.DiscoverResult:
            return types.DiscoverResult(supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
                                        capabilities=server.get_capabilities(), instructions=server.instructions)

        server.add_request_handler("server/discover", types.RequestParams, discover)
    return server


def _version() -> str:
    try:
        from agentworld_envs import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "0"


def serve(env_id: str, task_id: str | None = None, seed: int | None = 0, transport: str = "stdio",
          host: str = "127.0.0.1", port: int = 8765, max_turns: int | None = None,
          max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
    """Run the server until stdin closes (stdio) or the process is stopped (http)."""
    import anyio

    if transport not in ("stdio", "http"):
        raise ValueError("transport must be 'stdio' or 'http'")
    episodes = EpisodeHost(env_id, task_id=task_id, seed=seed, max_turns=max_turns, max_sessions=max_sessions)
    server = build_server(episodes, transport)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read, write):
                pending = _Pending()
                await server.run(_DrainingReceive(read, pending), _AnsweringSend(write, pending),
                                 server.create_initialization_options())

        anyio.run(main)
        return
    import uvicorn

    app = server.streamable_http_app(host=host)
    print(f"agentworld MCP server for {episodes.env_id} (task {episodes.task_info['task_id']}) "
          f"on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")).run()


#: Longest wait, after stdin closes, for the requests read before it to be answered.
DRAIN_TIMEOUT_S = 300.0


class _Pending:
    """Ids of requests read from stdin and not answered yet."""

    def __init__(self) -> None:
        import anyio

        self.ids: set[Any] = set()
        self.idle = anyio.Event()
        self.idle.set()

    def add(self, request_id: Any) -> None:
        import anyio

        if not self.ids:
            self.idle = anyio.Event()
        self.ids.add(request_id)

    def done(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        if not self.ids:
            self.idle.set()


def _message_of(item: Any) -> Any:
    message = getattr(item, "message", None)
    return getattr(message, "root", message)


class _DrainingReceive:
    """The stdio read stream, except that its end comes only once every request read from it is answered.

    The SDK's dispatcher cancels in-flight handlers when its read stream ends, so a client that
    writes requests and closes stdin (a pipe, ``printf ... | agentworld serve-mcp``) lost the
    replies to every request still running. Holding the end back until they are answered (or
    :data:`DRAIN_TIMEOUT_S`) gives each request its reply.
    """

    def __init__(self, inner: Any, pending: _Pending):
        self._inner, self._pending = inner, pending

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            with anyio.move_on_after(DRAIN_TIMEOUT_S):
                await self._pending.idle.wait()
            raise
        message = _message_of(item)
        if type(message).__name__ == "JSONRPCRequest":
            self._pending.add(message.id)
        elif type(message).__name__ == "JSONRPCNotification" and message.method == "notifications/cancelled":
            params = message.params or {}
            self._pending.done(params.get("requestId") if isinstance(params, dict) else getattr(params, "request_id", None))
        return item

    def __aiter__(self) -> "_DrainingReceive":
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "_DrainingReceive":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class _AnsweringSend:
    """The stdio write stream, marking each request answered when its response or error is written."""

    def __init__(self, inner: Any, pending: _Pending):
        self._inner, self._pending = inner, pending

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        message = _message_of(item)
        if type(message).__name__ in ("JSONRPCResponse", "JSONRPCError", "JSONRPCErrorResponse"):
            self._pending.done(getattr(message, "id", None))

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "_AnsweringSend":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def register_mcp_command(app: typer.Typer) -> None:
    """Add ``serve-mcp`` to a typer app (the ``agentworld`` CLI)."""

    @app.command("serve-mcp")
    def serve_mcp(
        env_id: str = typer.Argument(..., help="environment id or name, e.g. agentworld/retail-v0"),
        task: Optional[str] = typer.Option(None, help="task id (default: the seeded pick)"),
        seed: int = typer.Option(0, min=0, help="reset seed (picks the task when --task is not given)"),
        transport: str = typer.Option("stdio", help="stdio | http (streamable HTTP)"),
        host: str = typer.Option("127.0.0.1", help="HTTP bind address (loopback by default)"),
        port: int = typer.Option(8765, min=1, max=65535, help="HTTP port"),
        max_turns: Optional[int] = typer.Option(None, min=1, help="tool calls allowed per episode (default: the spec's)"),
        max_sessions: int = typer.Option(
            DEFAULT_MAX_SESSIONS, min=1,
            help="live HTTP episodes kept; beyond it the least recently used session is closed and its next "
                 "call fails with a session_evicted error (start a new session)"),
    ) -> None:
        """Serve one environment episode per MCP session (tools, submit -> verifier score, agentworld://task)."""
        from ..util.extras import require

        require("mcp", "agentworld serve-mcp")
        if transport not in ("stdio", "http"):
            raise typer.BadParameter("--transport must be stdio or http")
        # Unknown env/task ids raise UnknownEnvError/UnknownTaskError: the CLI wrapper prints them as one line.
        serve(env_id, task_id=task, seed=seed, transport=transport, host=host, port=port,
              max_turns=max_turns, max_sessions=max_sessions)


def main() -> None:
    from ..util.errors import run_cli

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register_mcp_command(app)
    # A single-command typer app takes the command's arguments directly.
    run_cli(app, prog="agentworld serve-mcp")


if __name__ == "__main__":
    main()
