"""The MCP server, driven by the real ``mcp`` client over stdio and streamable HTTP (subprocesses).

Every tool result is compared with what ``AgentWorldEnv.step`` returns for the same call in this
process: the server must be the gym env behind another protocol, byte for byte.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.engine.actions import format_call, parse_action
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from mcp_http import http_server

RETAIL = "agentworld/retail-v0"
TIMEOUT = 90  # seconds for one whole client conversation (includes server start-up)


@pytest.fixture(scope="module")
def plan():
    """A retail task whose reference solution reads then writes, replayed in-process for expectations."""
    env = gym.make(RETAIL).unwrapped
    for task_id in env.task_ids:
        env.reset(options={"task_id": task_id})
        calls = [parse_action(a) for a in env.solution_actions()]
        kinds = [env.bundle.tools[c.name].writes if c.name in env.bundle.tools else None for c in calls]
        if False in kinds and True in kinds and kinds.index(False) < kinds.index(True):
            break
    else:
        pytest.fail("no retail task reads then writes")
    calls = [(c.name, c.arguments) for c in calls]
    expected = [env.step(format_call(n, a))[0] for n, a in calls]  # gym observations, step by step
    env.reset(options={"task_id": task_id})
    bad = ("get_order_details", {"order_id": "not-a-field"})
    bad_obs = env.step(format_call(*bad))[0]
    unknown_obs = env.step(format_call("fly_to_moon", {}))[0]
    assert json.loads(bad_obs)["error"]["code"] == "invalid_arguments"
    tool_names = [t["function"]["name"] for t in env.tools]
    env.close()
    return {"task_id": task_id, "calls": calls, "expected": expected, "bad": bad, "bad_obs": bad_obs,
            "unknown_obs": unknown_obs, "tool_names": tool_names,
            "write_index": next(i for i, (n, _) in enumerate(calls) if n in tool_names and kinds[i])}


def _server_args(task_id: str, *extra: str) -> list[str]:
    return ["-m", "agentworld_envs.serving.mcp_server", RETAIL, "--task", task_id, *extra]


def _text(result) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


async def _check_conversation(client, plan) -> None:
    """list tools, read, write, bad arguments, unknown tool, submit -> 1.0, then episode over."""
    listed = await client.list_tools()
    names = [t.name for t in listed.tools]
    assert names[: len(plan["tool_names"])] == plan["tool_names"] and "submit" in names and "get_task" in names
    by_name = {t.name: t for t in listed.tools}
    first = plan["calls"][0][0]
    assert by_name[first].input_schema["type"] == "object" and by_name[first].annotations.read_only_hint is True
    assert by_name[plan["calls"][plan["write_index"]][0]].annotations.read_only_hint is False

    task = await client.call_tool("get_task", {})
    assert not task.is_error and json.loads(_text(task))["task_id"] == plan["task_id"]
    resource = await client.read_resource("agentworld://task")
    assert "# Policy" in resource.contents[0].text and "# Task" in resource.contents[0].text

    bad = await client.call_tool(*plan["bad"])
    assert bad.is_error and _text(bad) == plan["bad_obs"]
    unknown = await client.call_tool("fly_to_moon", {})
    assert unknown.is_error and _text(unknown) == plan["unknown_obs"]

    for (name, args), expected in zip(plan["calls"][:-1], plan["expected"][:-1]):
        result = await client.call_tool(name, args)
        assert not result.is_error, _text(result)
        assert _text(result) == expected, name  # byte-identical to the gym env's observation
    submitted = await client.call_tool(*plan["calls"][-1])
    assert not submitted.is_error
    assert submitted.structured_content["score"] == 1.0 and submitted.structured_content["success"] is True
    assert all(c["passed"] for c in submitted.structured_content["checks"])
    assert json.loads(_text(submitted)) == json.loads(plan["expected"][-1])
    after = await client.call_tool(*plan["calls"][0])
    assert after.is_error and json.loads(_text(after))["error"]["code"] == "episode_over"


def test_stdio_episode_matches_gym_env(plan):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=_server_args(plan["task_id"]),
                                   env=dict(os.environ), cwd=os.getcwd())

    async def main():
        with anyio.fail_after(TIMEOUT):
            async with Client(params, read_timeout_seconds=60) as client:
                await _check_conversation(client, plan)

    anyio.run(main)


def _http_server(task_id: str):
    return http_server(RETAIL, "--task", task_id)


def test_http_episode_matches_gym_env(plan):
    from mcp import Client

    async def main():
        with anyio.fail_after(TIMEOUT):
            async with _http_server(plan["task_id"]) as url:
                async with Client(url, read_timeout_seconds=60) as client:
                    assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS  # negotiated a session
                    await _check_conversation(client, plan)

    anyio.run(main)


def test_http_sessions_are_isolated(plan):
    """A write in one session is invisible in another; each session scores its own episode."""
    from mcp import Client

    write = plan["write_index"]
    reads = [(n, a) for n, a in plan["calls"][:write]]

    async def main():
        with anyio.fail_after(TIMEOUT):
            async with _http_server(plan["task_id"]) as url:
                async with Client(url, read_timeout_seconds=60) as a, Client(url, read_timeout_seconds=60) as b:
                    for name, args in plan["calls"][: write + 1]:  # a: reads, then the write
                        assert not (await a.call_tool(name, args)).is_error
                    # b still sees the golden state: its reads equal the fresh gym env's
                    for (name, args), expected in zip(reads, plan["expected"]):
                        assert _text(await b.call_tool(name, args)) == expected
                    # ... and its episode has none of a's changes, so submitting now fails there
                    b_score = (await b.call_tool(*plan["calls"][-1])).structured_content["score"]
                    for name, args in plan["calls"][write + 1:]:
                        last = await a.call_tool(name, args)
                    assert last.structured_content["score"] == 1.0 and b_score < 1.0
                # a new session starts a fresh episode even after the others ended theirs
                async with Client(url, read_timeout_seconds=60) as c:
                    result = await c.call_tool(*plan["calls"][0])
                    assert not result.is_error and _text(result) == plan["expected"][0]

    anyio.run(main)


def test_serve_mcp_command_is_registered():
    import typer
    from typer.testing import CliRunner

    from agentworld_envs.serving.mcp_server import register_mcp_command

    app = typer.Typer()
    register_mcp_command(app)

    @app.command()
    def other() -> None:  # a second command makes typer dispatch by name, as in the real CLI
        pass

    out = CliRunner().invoke(app, ["serve-mcp", "--help"])
    assert out.exit_code == 0 and "--transport" in out.output and "--task" in out.output
    bad = CliRunner().invoke(app, ["serve-mcp", RETAIL, "--transport", "carrier-pigeon"])
    assert bad.exit_code != 0
