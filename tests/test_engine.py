"""The Gymnasium env over the toy spec: every tool kind, transactions, isolation, determinism, vectors."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest

from agentworld_envs.engine.actions import format_call
from agentworld_envs.audit.validation import check_env_passes, deterministic, noop_score, solution_score


def call(_tool, **arguments):
    return format_call(_tool, arguments)


@pytest.fixture
def env(toy_env_id):
    e = gym.make(toy_env_id)
    e.reset(seed=0, options={"task_id": "lend-1"})
    yield e
    e.close()


def step_json(env, action):
    obs, reward, terminated, truncated, info = env.step(action)
    json.dumps(info)  # every info value must be JSON-serialisable
    return json.loads(obs), reward, terminated, truncated, info


def test_reset_observation_and_info(toy_env_id):
    env = gym.make(toy_env_id)
    obs, info = env.reset(seed=0, options={"task_id": "lend-1"})
    assert "Lend book 2 to member 1." in obs and "at most 3 active loans" in obs
    assert info["env_id"] == toy_env_id and info["task_id"] == "lend-1" and info["split"] == "train"
    names = [t["function"]["name"] for t in info["tools"]]
    assert names[-1] == "submit" and "lend_book" in names
    assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in info["tools"])
    assert env.observation_space.contains(obs)
    json.dumps(info)


def test_every_tool_kind(env):
    member, *_ = step_json(env, call("get_member", member_id=1))
    assert member["id"] == 1 and isinstance(member["loans"], list)
    page, *_ = step_json(env, call("search_books", status="available", limit=3, offset=1))
    assert len(page["results"]) == 3 and page["offset"] == 1
    assert all(b["status"] == "available" for b in page["results"]) and page["total"] >= 3
    groups, *_ = step_json(env, call("count_books"))
    assert sum(g["value"] for g in groups["groups"]) == 30
    created, *_ = step_json(env, call("register_member", name="Ada", email="ada@example.org"))
    assert created["created"]["tier"] == "basic"
    updated, *_ = step_json(env, call("update_member_email", member_id=created["created"]["id"], email="ada@x.org"))
    assert updated["updated"]["email"] == "ada@x.org"
    deleted, *_ = step_json(env, call("delete_member", member_id=created["created"]["id"]))
    assert deleted["deleted"]["name"] == "Ada"


def test_like_filter_treats_wildcards_literally(env):
    page, *_ = step_json(env, call("search_books", title="%"))
    assert page["total"] == 0


def test_transition_precondition_and_side_effect(env):
    conn = env.unwrapped.conn
    loans_before = conn.execute("SELECT COUNT(*) FROM loans").fetchone()[0]
    out, *_ = step_json(env, call("lend_book", book_id=2, member_id=1))
    assert out["updated"]["status"] == "lent"
    assert conn.execute("SELECT COUNT(*) FROM loans").fetchone()[0] == loans_before + 1
    again, _, _, _, info = step_json(env, call("lend_book", book_id=2, member_id=1))
    assert info["error"] == "precondition_failed" and "status" in again["error"]["message"]


def test_failing_write_rolls_back_completely(env):
    """A transition whose side effect violates a foreign key leaves no trace of its first write."""
    before = env.unwrapped.state_hash()
    out, _, _, _, info = step_json(env, call("lend_book", book_id=2, member_id=99999))
    assert info["error"] == "constraint_violation", out
    assert env.unwrapped.state_hash() == before
    assert env.unwrapped.conn.execute("SELECT status FROM books WHERE id = 2").fetchone()[0] == "available"


@pytest.mark.parametrize("action, code", [
    ("hello there", "parse_error"),
    ("<tool_call>{not json</tool_call>", "parse_error"),
    (call("fly_to_moon"), "unknown_tool"),
    (call("get_member", member_id="one"), "invalid_arguments"),
    (call("get_member"), "invalid_arguments"),
    (call("get_member", member_id=1, extra=True), "invalid_arguments"),
    (call("get_member", member_id=123456), "not_found"),
    (call("register_member", name="Bo", email="x" * 5000), "invalid_arguments"),
    ("x" * 70_000, "action_too_long"),
])
def test_bad_actions_give_error_observations(env, action, code):
    before = env.unwrapped.state_hash()
    obs, reward, terminated, truncated, info = step_json(env, action)
    assert info["error"] == code and obs["error"]["code"] == code and obs["error"]["message"]
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert env.unwrapped.state_hash() == before


def test_action_formats_are_equivalent(env):
    payload = {"name": "get_member", "arguments": {"member_id": 3}}
    openai_msg = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_member", "arguments": json.dumps({"member_id": 3})}}]}
    outs = {env.step(a)[0] for a in (
        "I'll look it up.\n<tool_call>\n" + json.dumps(payload) + "\n</tool_call>",
        json.dumps(payload),
        json.dumps(openai_msg),
    )}
    assert len(outs) == 1 and json.loads(outs.pop())["id"] == 3


def test_hidden_policy_shows_only_the_task_and_rules_still_hold(toy_env_id):
    env = gym.make(toy_env_id, show_policy=False)
    obs, info = env.reset(seed=0, options={"task_id": "lend-1"})
    assert obs == "# Task\nLend book 2 to member 1." and "Policy" not in obs
    assert solution_score(env.unwrapped, "lend-1") == 1.0  # same tasks, same tools, same verifier
    with pytest.raises(TypeError, match="show_policy must be a bool"):
        gym.make(toy_env_id, show_policy="no")


def test_submit_scores_and_terminates(toy_env_id):
    env = gym.make(toy_env_id).unwrapped
    for task_id in env.task_ids:
        assert solution_score(env, task_id) == 1.0
        assert noop_score(env, task_id) == 0.0
    env.reset(options={"task_id": "lend-1"})
    obs, reward, terminated, truncated, info = env.step(call("submit"))
    assert terminated and not truncated and reward == 0.0 and info["success"] is False
    # the exact state check (sealed from the reference) and the task's sql check fail; its footprint holds
    assert [(c["type"], c["passed"]) for c in info["checks"]] == [("outcome", True), ("state", False), ("sql", False),
                                                                   ("footprint", True)]
    obs, reward, terminated, _, info = env.step(call("get_member", member_id=1))
    assert info["error"] == "episode_over" and terminated


def test_turn_limit_truncates(toy_env_id):
    env = gym.make(toy_env_id, max_turns=3)
    env.reset(seed=0)
    results = [env.step(call("count_books")) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert results[-1][1] == 0.0 and results[-1][4]["success"] is False


def test_footprint_catches_collateral_damage(toy_env_id):
    env = gym.make(toy_env_id).unwrapped
    env.reset(options={"task_id": "lend-1"})
    env.step(call("lend_book", book_id=2, member_id=1))
    env.step(call("update_member_email", member_id=5, email="changed@example.org"))
    _, reward, _, _, info = env.step(call("submit"))
    assert reward == 0.0
    failed = {c["type"]: c["detail"] for c in info["checks"] if not c["passed"]}
    assert set(failed) == {"state", "footprint"}
    assert "members" in failed["state"] and "members" in failed["footprint"]


def test_changed_then_restored_table_is_not_collateral(toy_env_id):
    env = gym.make(toy_env_id).unwrapped
    env.reset(options={"task_id": "lend-1"})
    original = env.conn.execute("SELECT email FROM members WHERE id = 5").fetchone()[0]
    env.step(call("update_member_email", member_id=5, email="tmp@example.org"))
    env.step(call("update_member_email", member_id=5, email=original))
    for a in env.solution_actions():
        *_, info = env.step(a)
    assert info["success"] is True


def test_episodes_are_isolated(toy_env_id):
    a, b = gym.make(toy_env_id).unwrapped, gym.make(toy_env_id).unwrapped
    a.reset(options={"task_id": "lend-1"})
    b.reset(options={"task_id": "lend-1"})
    golden = b.state_hash()
    a.step(call("lend_book", book_id=2, member_id=1))
    assert a.state_hash() != golden and b.state_hash() == golden
    assert b.conn.execute("SELECT status FROM books WHERE id = 2").fetchone()[0] == "available"
    a.reset(options={"task_id": "lend-1"})
    assert a.state_hash() == golden


def test_obscured_tool_names(toy_env_id):
    env = gym.make(toy_env_id, obscure_tools=True).unwrapped
    _, info = env.reset(options={"task_id": "lend-1"})
    names = [t["function"]["name"] for t in info["tools"]]
    assert names[:-1] == [f"tool_{i:02d}" for i in range(1, len(names))] and names[-1] == "submit"
    assert "lend_book" not in " ".join(env.solution_actions())
    _, info2 = env.reset(options={"task_id": "lend-1"})
    for a in env.solution_actions():
        *_, last = env.step(a)
    assert last["success"] is True
    assert env.step(call("lend_book", book_id=2, member_id=1))[4]["error"] == "episode_over"


def test_seeded_reset_is_deterministic(toy_env_id):
    assert deterministic(toy_env_id)
    ids = {gym.make(toy_env_id).reset(seed=s)[1]["task_id"] for s in range(20)}
    assert ids == {"lend-1", "count-1"}


def test_check_env_passes(toy_env_id):
    assert check_env_passes(toy_env_id) == (True, "")


def test_state_hash_is_the_same_in_another_process(toy_env_id, tmp_path):
    env = gym.make(toy_env_id).unwrapped
    env.reset(options={"task_id": "lend-1"})
    for a in env.solution_actions():
        env.step(a)
    here = env.state_hash()
    script = (
        "import sys, gymnasium as gym, agentworld_envs; sys.path.insert(0, 'tests');"
        "from toy_spec import toy_spec; eid = agentworld_envs.register_spec(toy_spec());"
        "e = gym.make(eid).unwrapped; e.reset(options={'task_id': 'lend-1'});"
        "[e.step(a) for a in e.solution_actions()]; print(e.state_hash())"
    )
    env_vars = {"AGENTWORLD_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "7"}
    import os

    env_vars = {**os.environ, **env_vars}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env_vars, check=True)
    assert out.stdout.strip() == here


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_return_real_observations(toy_env_id, mode):
    vec = gym.make_vec(toy_env_id, num_envs=3, vectorization_mode=mode)
    try:
        obs, info = vec.reset(seed=[0, 1, 2])
        assert all(o.startswith("# Policy") for o in obs)
        obs, reward, terminated, truncated, info = vec.step([call("get_member", member_id=i + 1) for i in range(3)])
        assert [json.loads(o)["id"] for o in obs] == [1, 2, 3]
        obs, *_ = vec.step([call("count_books")] * 3)
        assert all("groups" in json.loads(o) for o in obs)
    finally:
        vec.close()


def test_gymnasium_wrappers(toy_env_id):
    from gymnasium.wrappers import RecordEpisodeStatistics, TimeLimit

    env = RecordEpisodeStatistics(TimeLimit(gym.make(toy_env_id), max_episode_steps=2))
    env.reset(seed=0)
    env.step(call("count_books"))
    *_, truncated, info = env.step(call("count_books"))
    assert truncated and info["episode"]["l"] == 2


def test_a_plain_date_bounds_a_timestamp_by_its_whole_day():
    """``triggered_at_to: 2026-05-31`` holds an alert raised at 10:00 that day, ``…_from`` too; a plain date
    compared as text would leave the whole last day out."""
    import sqlite3

    from agentworld_envs.engine.tools import compile_tool, invoke

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE alerts (id INTEGER PRIMARY KEY, at TEXT)")
    conn.executemany("INSERT INTO alerts (at) VALUES (?)", [("2026-05-30T23:00:00Z",), ("2026-05-31T10:00:00Z",),
                                                            ("2026-06-01T00:30:00Z",)])
    tool = compile_tool({"name": "search_alerts", "description": "Search alerts.", "parameters": {
        "type": "object", "properties": {"at_from": {"type": "string"}, "at_to": {"type": "string"},
                                         "after": {"type": "string"}}},
        "impl": {"kind": "search", "table": "alerts", "filters": [
            {"param": "at_from", "column": "at", "op": "gte"}, {"param": "at_to", "column": "at", "op": "lte"},
            {"param": "after", "column": "at", "op": "gt"}]}})
    ids = lambda **a: [r["id"] for r in invoke(conn, tool, a, "2026-06-15T12:00:00Z")["results"]]  # noqa: E731
    assert ids(at_from="2026-05-31", at_to="2026-05-31") == [2]
    assert ids(at_to="2026-05-31T09:00:00Z") == [1]
    assert ids(after="2026-05-31") == [3]


def test_faker_pools_do_not_follow_the_hash_seed():
    """it_IT's city list is built from a set: without sorting, two processes drew different pizzerias' towns."""
    import os

    script = ("from agentworld_envs.engine.datagen import faker_pool; "
              "print(repr(faker_pool('it_IT', 'city')[:40]))")
    seen = set()
    for seed in ("1", "2", "3"):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        seen.add(out.stdout)
    assert len(seen) == 1, "the it_IT city pool differs between hash seeds"
    assert "'" in next(iter(seen))   # the pool printed real names
