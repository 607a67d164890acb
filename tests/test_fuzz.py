"""Fuzzing ``step()``: any text is an observation, never an exception, and errors never change state."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import env_registry

ENV_IDS = ["toy"] + (["agentworld/retail-v0"] if any(e["name"] == "retail" for e in env_registry.manifest()) else [])

SQLISH = st.sampled_from([
    "'; DROP TABLE orders; --", "1 OR 1=1", "\" OR \"\"=\"", "Robert'); DELETE FROM customers;--",
    "%", "_", "\\", "NULL", "1; UPDATE products SET price = 0", "' UNION SELECT * FROM sqlite_master --",
])
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40), SQLISH)
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)


@pytest.fixture(scope="module", params=ENV_IDS)
def env(request, toy_env_id):
    env_id = toy_env_id if request.param == "toy" else request.param
    e = gym.make(env_id).unwrapped
    e.reset(seed=0)
    return e


def tool_names(env):
    return [t["function"]["name"] for t in env.tools]


def _assert_safe_step(env, action):
    before = env.state_hash()
    turn = env.turn
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and env.observation_space.contains(obs)
    json.dumps(info)
    if info["error"] is not None:
        assert json.loads(obs)["error"]["code"] == info["error"]
        assert env.state_hash() == before, f"state changed on error {info['error']}"
    if terminated or truncated or env.turn >= env.max_turns - 1 or env.turn == turn:
        env.reset(seed=0)
    return info


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@SETTINGS
@given(text=st.text(max_size=300))
def test_random_text(env, text):
    _assert_safe_step(env, text)


@SETTINGS
@given(data=st.data())
def test_calls_with_random_arguments(env, data):
    name = data.draw(st.sampled_from([n for n in tool_names(env) if n != "submit"] + ["no_such_tool", ""]))
    args = data.draw(st.one_of(json_values, st.dictionaries(st.text(max_size=12), json_values, max_size=5)))
    wrap = data.draw(st.sampled_from(["hermes", "bare", "openai", "string-args", "truncated"]))
    payload = {"name": name, "arguments": args}
    if wrap == "hermes":
        action = "<tool_call>" + json.dumps(payload) + "</tool_call>"
    elif wrap == "bare":
        action = json.dumps(payload)
    elif wrap == "openai":
        action = json.dumps({"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
    elif wrap == "string-args":
        action = json.dumps({"name": name, "arguments": json.dumps(args)})
    else:
        text = json.dumps(payload)
        action = text[: data.draw(st.integers(0, max(0, len(text) - 1)))]
    _assert_safe_step(env, action)


@SETTINGS
@given(data=st.data())
def test_schema_shaped_arguments_with_hostile_strings(env, data):
    """Right argument names, wrong or hostile values: SQL-looking strings, huge numbers, Unicode."""
    tool = data.draw(st.sampled_from([t["function"] for t in env.tools if t["function"]["name"] != "submit"]))
    props = tool["parameters"].get("properties", {})
    args = {k: data.draw(st.one_of(SQLISH, scalars, st.text(alphabet=st.characters(codec="utf-8"), max_size=30)))
            for k in props}
    _assert_safe_step(env, "<tool_call>" + json.dumps({"name": tool["name"], "arguments": args}) + "</tool_call>")


@pytest.mark.parametrize("action", [
    "x" * (1 << 20),
    "<tool_call>" + json.dumps({"name": "a" * 100_000, "arguments": {}}) + "</tool_call>",
    "[" * 50_000 + "]" * 50_000,
    '{"name": "submit", "arguments": ' + "[" * 10_000 + "]" * 10_000 + "}",
    "<tool_call>" + "{" * 5000,
    "\x00\ud7ff\ue000\U0010ffff",
    "<tool_call></tool_call>",
    "{}",
    "null",
    json.dumps({"tool_calls": []}),
])
def test_pathological_actions(env, action):
    info = _assert_safe_step(env, action)
    assert info["error"] is not None


def test_sql_injection_is_data_not_code(env):
    before = env.state_hash()
    for tool in env.tools:
        fn = tool["function"]
        if fn["name"] == "submit":
            continue
        for key, schema in fn["parameters"].get("properties", {}).items():
            if schema.get("type") == "string" and "enum" not in schema:
                env.step("<tool_call>" + json.dumps({"name": fn["name"], "arguments": {key: "'; DROP TABLE orders; --"}}) + "</tool_call>")
                break
        if env.turn >= env.max_turns - 1:
            env.reset(seed=0)
    tables = env.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert ("orders",) in tables or ("books",) in tables
    assert env.state_hash() != "" and before
