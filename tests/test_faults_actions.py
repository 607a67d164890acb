"""Actions mean one thing: text arguments are text, a call's JSON has one reading, an action is all or
nothing, limits are positive; MCP answers every request it read and shows the task after eviction."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.engine.actions import ActionError, parse_calls
from agentworld_envs.serving.mcp_server import EpisodeHost

ENV = "agentworld/retail-v0"


def _call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


@pytest.fixture()
def env():
    e = gym.make(ENV)
    e.reset(seed=0)
    yield e
    e.close()


def _code(obs):
    data = json.loads(obs)
    return data["error"]["code"] if isinstance(data, dict) and "error" in data else None


# ----------------------------------------------------------------------------------- text arguments are text

@pytest.mark.parametrize("text", ["\x00", "a\x00zzqx", "\x00%", "Mil\x00ler", "\x01", "\x1b[31m", "\x7f", "\x85",
                                  "\x08", "\x0b", "\x0c", "\x1f"])
def test_control_characters_in_arguments_are_invalid(env, text):
    obs, _, _, _, info = env.step(_call("search_customers", last_name=text))
    assert info["error"] == "invalid_arguments" and "control character" in obs, obs


def test_the_nul_search_does_not_match_everyone(env):
    obs, *_ = env.step(_call("search_customers", last_name="\x00"))
    assert '"total"' not in obs
    obs, *_ = env.step(_call("search_customers", last_name="Miller"))
    total = json.loads(obs)["total"]
    assert 0 < total < 280


@pytest.mark.parametrize("text", ["line one\nline two", "tab\there", "cr\r\nlf"])
def test_tab_and_newlines_are_text(env, text):
    obs, _, _, _, info = env.step(_call("search_customers", last_name=text))
    assert info["error"] is None and json.loads(obs)["total"] == 0   # matched literally: nobody


def test_control_characters_nested_and_in_the_answer(env):
    obs, _, _, _, info = env.step(_call("add_order_note", order_id=1, body="ok\x00"))
    assert info["error"] == "invalid_arguments"
    obs, _, terminated, _, info = env.step(_call("submit", answer="done\x00"))
    assert not terminated and info["error"] == "invalid_arguments"


def test_control_characters_through_mcp(toy_env_id):
    host = EpisodeHost(ENV)
    text, is_error, _ = host.call("s", "search_customers", {"last_name": "\x00"})
    assert is_error and json.loads(text)["error"]["code"] == "invalid_arguments"


def test_records_with_newlines_stay_one_line_each(tmp_path):
    from agentworld_envs.arena.evaluation import read_records

    env = gym.make(ENV)
    env.reset(seed=0)
    _, _, _, _, info = env.step(_call("submit", answer="first line\nsecond line\r\n{\"x\": 1}"))
    record = {"env_id": ENV, "task_id": "t", "success": False, "reward": 0.0, "outcome": "wrong_answer", "turns": 1,
              "answer": info["answer"]}
    (tmp_path / "records.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n")
    assert len((tmp_path / "records.jsonl").read_text().splitlines()) == 2
    assert [r["answer"] for r in read_records(tmp_path)] == [info["answer"]] * 2


# ----------------------------------------------------------------------------------- one reading per call

@pytest.mark.parametrize("action", [
    '{"name": "get_customer_details", "name": "submit", "arguments": {}}',
    '{"name": "get_customer_details", "arguments": {"customer_id": 1, "customer_id": 2}}',
    '<tool_call>{"name": "submit", "arguments": {"answer": "a", "answer": "b"}}</tool_call>',
    '{"name": "get_customer_details", "arguments": "{\\"customer_id\\": 1, \\"customer_id\\": 2}"}',
    '{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "submit", '
    '"arguments": "{\\"answer\\": \\"x\\", \\"answer\\": \\"y\\"}"}}]}',
    '{"name": "get_customer_details", "arguments": {"customer_id": 1}, "arguments": {"customer_id": 2}}',
])
def test_duplicate_keys_are_parse_errors(env, action):
    with pytest.raises(ActionError) as info:
        parse_calls(action)
    assert info.value.code == "parse_error" and "duplicate" in info.value.message
    obs, _, terminated, _, step_info = env.step(action)
    assert step_info["error"] == "parse_error" and not terminated


@pytest.mark.parametrize("action", [
    '<tool_call>{"name": "submit", "arguments": {}}',
    '<tool_call>{"name": "get_customer_details", "arguments": {"customer_id": 1}}</tool_call>\n'
    '<tool_call>{"name": "submit", "arguments": {}}',
    '<tool_call>{"name": "submit", "arguments": {}} trailing words </tool_call>',
    '<tool_call>{"name": "submit", "arguments": {}}<tool_call>',
])
def test_unclosed_or_padded_tool_call_is_a_parse_error(env, action):
    obs, _, terminated, _, info = env.step(action)
    assert info["error"] == "parse_error" and not terminated, obs
    assert info["calls"] == [{"tool_name": None, "error": "parse_error"}]


@pytest.mark.parametrize("action", [
    '<tool_call>{"name": "submit", "arguments": {}}</tool_call>',
    '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
    'Let me finish.\n<tool_call>\n```json\n{"name": "submit", "arguments": {}}\n```\n</tool_call>',
    '{"name": "submit", "arguments": {}}',
    'Sure: {"name": "submit", "arguments": {}} -- done',
])
def test_well_formed_shapes_still_work(env, action):
    _, _, terminated, _, info = env.step(action)
    assert terminated and info["error"] is None


def test_ambiguous_call_objects_are_parse_errors():
    for action in ['{"name": "submit", "function": {"name": "cancel_pending_order", "arguments": {}}}',
                   '{"name": "submit", "arguments": {}, "parameters": {"answer": "x"}}',
                   '{"name": "submit", "arguments": {}, "tool_calls": [{"name": "submit", "arguments": {}}]}']:
        with pytest.raises(ActionError) as info:
            parse_calls(action)
        assert info.value.code == "parse_error", action


# ----------------------------------------------------------------------------------- all or nothing

def _note_count(env):
    return env.unwrapped.conn.execute("SELECT COUNT(*) FROM order_notes").fetchone()[0]


def test_a_multi_call_action_is_all_or_nothing(env):
    golden = env.unwrapped.state_hash()
    before = _note_count(env)
    action = ("<tool_call>" + _call("add_order_note", order_id=1, body="first") + "</tool_call>"
              "<tool_call>" + _call("add_order_note", order_id=1, body="second") + "</tool_call>"
              "<tool_call>" + _call("get_order_details", order_id="not-a-number") + "</tool_call>"
              "<tool_call>" + _call("add_order_note", order_id=1, body="never run") + "</tool_call>")
    obs, _, terminated, _, info = env.step(action)
    parts = json.loads(obs)
    assert [p.get("error", {}).get("code") for p in parts] == ["rolled_back", "rolled_back", "invalid_arguments",
                                                               "not_run"]
    assert info["error"] == "invalid_arguments" and not terminated
    assert [c["error"] for c in info["calls"]] == ["rolled_back", "rolled_back", "invalid_arguments", "not_run"]
    assert _note_count(env) == before and env.unwrapped.state_hash() == golden
    # the same writes in an action that succeeds do stay
    ok = ("<tool_call>" + _call("add_order_note", order_id=1, body="first") + "</tool_call>"
          "<tool_call>" + _call("add_order_note", order_id=1, body="second") + "</tool_call>")
    obs, _, _, _, info = env.step(ok)
    assert info["error"] is None and _note_count(env) == before + 2


def test_a_failed_call_cancels_the_submit_of_its_action(env):
    golden = env.unwrapped.state_hash()
    action = ("<tool_call>" + _call("add_order_note", order_id=1, body="x") + "</tool_call>"
              "<tool_call>" + _call("cancel_pending_order", order_id=10**9, reason="no longer needed") + "</tool_call>"
              "<tool_call>" + _call("submit", answer="done") + "</tool_call>")
    obs, reward, terminated, _, info = env.step(action)
    assert not terminated and reward == 0.0 and info["error"] not in (None, "rolled_back", "not_run")
    assert json.loads(obs)[-1]["error"]["code"] == "not_run"
    assert env.unwrapped.state_hash() == golden


# ----------------------------------------------------------------------------------- limits

@pytest.mark.parametrize("kwargs", [{"max_turns": -5}, {"max_turns": 0}, {"max_tools": -1}, {"max_tools": 0},
                                    {"max_turns": 2.5}, {"max_turns": True}, {"max_tools": "3"}])
def test_non_positive_or_non_integer_limits_are_refused(kwargs):
    with pytest.raises((ValueError, TypeError)):
        gym.make(ENV, **kwargs)


def test_positive_limits_work():
    e = gym.make(ENV, max_turns=1, max_tools=3)
    _, info = e.reset(seed=0)
    assert info["max_turns"] == 1
    _, _, _, truncated, _ = e.step(_call("get_order_details", order_id=1))
    assert truncated


# ----------------------------------------------------------------------------------- MCP

def test_get_task_works_after_eviction():
    host = EpisodeHost(ENV, max_sessions=1)
    task, is_error, _ = host.call("a", "get_task", {})
    assert not is_error
    host.call("a", "get_customer_details", {"customer_id": 1})
    host.call("b", "get_customer_details", {"customer_id": 1})          # evicts "a"
    again, is_error, _ = host.call("a", "get_task", {})
    assert not is_error and json.loads(again)["task_id"] == json.loads(task)["task_id"]
    text, is_error, _ = host.call("a", "get_customer_details", {"customer_id": 1})
    assert is_error and json.loads(text)["error"]["code"] == "session_evicted"


def _rpc(i, method, params=None):
    msg = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg) + "\n"


def test_stdio_requests_pending_when_stdin_closes_get_replies():
    proc = subprocess.Popen([sys.executable, "-m", "agentworld_envs.serving.mcp_server", ENV], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ})
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}
    calls = [_rpc(10 + k, "tools/call", {"name": "get_customer_details", "arguments": {"customer_id": k + 1}})
             for k in range(5)]
    calls.append(_rpc(20, "tools/call", {"name": "get_task", "arguments": {}}))
    payload = _rpc(1, "initialize", init) + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
    payload += "".join(calls)
    proc.stdin.write(payload.encode())
    proc.stdin.close()          # EOF right after the requests: every one of them is still answered
    out = b""
    deadline = time.time() + 180
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
    proc.kill()
    proc.wait()
    ids = {json.loads(line).get("id") for line in out.decode().splitlines() if line.strip()}
    assert {1, 10, 11, 12, 13, 14, 20} <= ids, out.decode()[-2000:]
