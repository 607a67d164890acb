"""MCP sessions never lose work silently: eviction at the session cap and the end of an episode."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio

from agentworld_envs.serving.mcp_server import EpisodeHost
from mcp_http import http_server

TIMEOUT = 120


def test_host_tells_an_evicted_session_instead_of_starting_over(toy_env_id):
    host = EpisodeHost(toy_env_id, task_id="lend-1", max_sessions=2)
    text, is_error, _ = host.call("a", "lend_book", {"book_id": 2, "member_id": 1})
    assert not is_error, text
    host.call("b", "search_books", {})
    host.call("c", "search_books", {})  # a third session: "a" is the least recently used
    assert host.live_episodes == 2
    for _ in range(2):  # every later call of "a" is refused, never handed a fresh episode
        text, is_error, _ = host.call("a", "search_books", {})
        assert is_error and json.loads(text)["error"]["code"] == "session_evicted"
        assert "new MCP session" in text and "--max-sessions" in text
    assert host.live_episodes == 2
    text, is_error, _ = host.call("b", "search_books", {})  # the survivors keep working
    assert not is_error


def test_host_episode_over_says_how_to_start_again(toy_env_id):
    host = EpisodeHost(toy_env_id, task_id="lend-1")
    _, is_error, structured = host.call("s", "submit", {})
    assert not is_error and "score" in structured
    text, is_error, _ = host.call("s", "search_books", {})
    error = json.loads(text)["error"]
    assert is_error and error["code"] == "episode_over"
    assert "reset()" not in error["message"] and "new MCP session" in error["message"]


def test_http_session_cap_evicts_explicitly():
    """Three live sessions against --max-sessions 2: the oldest is told it was evicted, over HTTP."""
    from mcp import Client

    async def main():
        with anyio.fail_after(TIMEOUT):
            async with http_server("agentworld/retail-v0", "--max-sessions", "2") as url:
                async with Client(url, read_timeout_seconds=60) as a, Client(url, read_timeout_seconds=60) as b, \
                        Client(url, read_timeout_seconds=60) as c:
                    read = ("get_customer_details", {"customer_id": 1})
                    assert not (await a.call_tool(*read)).is_error
                    assert not (await b.call_tool(*read)).is_error
                    assert not (await c.call_tool(*read)).is_error
                    evicted = await a.call_tool(*read)
                    assert evicted.is_error
                    error = json.loads(evicted.content[0].text)["error"]
                    assert error["code"] == "session_evicted" and "new MCP session" in error["message"]
                    assert not (await a.call_tool("get_task", {})).is_error   # the task is still readable
                    assert not (await c.call_tool(*read)).is_error
                    over = await b.call_tool("submit", {})
                    assert not over.is_error
                    after = await b.call_tool("get_task", {})
                    assert not after.is_error  # reading the task is still fine after submit
                    after = await b.call_tool("submit", {})
                    assert after.is_error and "new MCP session" in json.loads(after.content[0].text)["error"]["message"]

    anyio.run(main)


def test_serve_mcp_help_documents_the_cap():
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.serving.mcp_server", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "session_evicted" in " ".join(out.stdout.split())
