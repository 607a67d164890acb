"""Third-party conformance: Gymnasium's own checker, vector envs and standard wrappers on retail-v0.

(The registry-wide check_env run is ``agentworld validate --all``.)
"""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import agentworld_envs  # noqa: F401
from agentworld_envs.engine.actions import format_call

RETAIL = "agentworld/retail-v0"


@pytest.fixture(scope="module")
def retail_task():
    """A retail task and its reference solution."""
    env = gym.make(RETAIL).unwrapped
    task_id = env.task_ids[0]
    env.reset(options={"task_id": task_id})
    actions = env.solution_actions()
    env.close()
    return task_id, actions


def test_gymnasium_check_env_on_retail():
    env = gym.make(RETAIL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning is a conformance failure, except:
        # text rendering has no frame rate; AgentWorldEnv.metadata declares no render_fps
        warnings.filterwarnings("ignore", message=".*render_fps.*")
        check_env(env.unwrapped, skip_render_check=False)
    for mode in ("ansi", "human"):  # the render modes the env declares work through check_env's render pass
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*render_fps.*")
            check_env(gym.make(RETAIL, render_mode=mode).unwrapped, skip_render_check=False)
    env.close()


def _wrapper_names(env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def test_ids_are_registered_without_the_passive_checker():
    # Registered with disable_env_checker=True (a first make is ~2 ms, the checker ~0.3 ms of it):
    # the full check_env above and the checker run below are what vouch for it instead.
    assert gym.spec(RETAIL).disable_env_checker
    assert _wrapper_names(gym.make(RETAIL)) == ["OrderEnforcing"]


def test_make_adds_default_wrappers_and_they_pass(retail_task):
    task_id, actions = retail_task
    env = gym.make(RETAIL, disable_env_checker=False)
    wrappers = _wrapper_names(env)
    assert "OrderEnforcing" in wrappers and "PassiveEnvChecker" in wrappers
    with pytest.raises(gym.error.ResetNeeded):
        env.step(actions[0])  # OrderEnforcing: step before reset
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the passive checker must have nothing to say
        obs, info = env.reset(seed=0, options={"task_id": task_id})
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated) == (1.0, True, False)
    env.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_on_retail(mode, retail_task):
    task_id, actions = retail_task
    vec = gym.make_vec(RETAIL, num_envs=2, vectorization_mode=mode)
    try:
        obs, info = vec.reset(seed=[0, 1], options={"task_id": task_id})
        assert len(obs) == 2 and all(o.startswith("# Policy") and "# Task" in o for o in obs)
        assert list(info["task_id"]) == [task_id, task_id]
        totals = []
        for action in actions:
            obs, reward, terminated, truncated, info = vec.step([action, format_call("count_orders_by_status", {})])
            totals.append(json.loads(obs[1]))
        assert terminated[0] and reward[0] == 1.0 and not terminated[1]  # env 0 solved, env 1 untouched
        assert all("groups" in t or "value" in t or "error" in t for t in totals)
        assert json.loads(obs[0]) == {"submitted": True, "score": 1.0, "success": True}
    finally:
        vec.close()


def test_record_episode_statistics_and_time_limit(retail_task):
    from gymnasium.wrappers import RecordEpisodeStatistics, TimeLimit

    task_id, actions = retail_task
    env = RecordEpisodeStatistics(TimeLimit(gym.make(RETAIL), max_episode_steps=len(actions) + 5))
    env.reset(seed=0, options={"task_id": task_id})
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
    assert terminated and not truncated
    assert info["episode"]["r"] == 1.0 and info["episode"]["l"] == len(actions)

    short = TimeLimit(gym.make(RETAIL), max_episode_steps=1)
    short.reset(seed=0, options={"task_id": task_id})
    *_, terminated, truncated, _ = short.step(actions[0])
    assert truncated and not terminated
