"""Fault injection on one env: bad reset options, and many threads stepping one instance."""

from __future__ import annotations

import json
import math
import threading

import gymnasium as gym
import numpy as np
import pytest

from agentworld_envs.engine.actions import format_call


@pytest.fixture()
def toy(toy_env_id):
    env = gym.make(toy_env_id, max_turns=100_000).unwrapped
    yield env
    env.close()


@pytest.mark.parametrize("options, error", [
    ({"task_id": ["x"]}, TypeError),
    ({"task_id": None}, TypeError),
    ({"task_id": "no-such-task"}, KeyError),
    ({"task_index": "abc"}, TypeError),
    ({"task_index": None}, TypeError),
    ({"task_index": math.nan}, TypeError),
    ({"task_index": math.inf}, TypeError),
    ({"task_index": 1.5}, TypeError),
    ({"task_index": 1.0}, TypeError),
    ({"task_index": True}, TypeError),
    ({"task_index": -1}, ValueError),
    ({"task_index": 2}, ValueError),  # the toy env has two tasks: no silent wrap-around
    ({"task_index": 10**30}, ValueError),
    ({"task_idx": 0}, ValueError),
    ({"task_id": "lend-1", "task_index": 0}, ValueError),
])
def test_reset_rejects_bad_options(toy, options, error):
    with pytest.raises(error) as info:
        toy.reset(options=options)
    message = str(info.value)
    assert "\n" not in message and ("task" in message or "option" in message)


def test_reset_rejects_non_dict_options(toy):
    with pytest.raises(TypeError, match="must be a dict"):
        toy.reset(options=["task_id"])


@pytest.mark.parametrize("index", [0, 1, np.int64(1), np.int32(0), np.uint8(1)])
def test_reset_accepts_ints_and_numpy_ints(toy, index):
    _, info = toy.reset(options={"task_index": index})
    assert info["task_id"] == toy.task_ids[int(index)]


def test_reset_by_task_id_and_default(toy):
    _, info = toy.reset(options={"task_id": "count-1"})
    assert info["task_id"] == "count-1"
    _, info = toy.reset(seed=0, options={})
    assert info["task_id"] in toy.task_ids


def test_threads_stepping_one_env_lose_no_reported_write(toy):
    """Every success a thread sees must be a row at the end, while other threads' calls fail."""
    toy.reset(options={"task_id": "lend-1"})
    taken = toy.conn.execute("SELECT email FROM members WHERE email IS NOT NULL LIMIT 1").fetchone()[0]
    threads, per_thread = 6, 60
    successes: list[tuple[int, str]] = []
    failures = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def work(t: int) -> None:
        start.wait()
        for i in range(per_thread):
            if i % 3 == 2:  # a failing write: duplicate e-mail violates UNIQUE and rolls back
                obs, *_ , info = toy.step(format_call("register_member", {"name": "dup", "email": taken}))
                with lock:
                    failures.append(info["error"])
                continue
            email = f"t{t}-{i}@example.org"
            obs, *_ , info = toy.step(format_call("register_member", {"name": f"n{t}-{i}", "email": email}))
            if info["error"] is None:
                with lock:
                    successes.append((json.loads(obs)["created"]["id"], email))

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert failures and set(failures) == {"constraint_violation"}
    assert len(successes) == threads * (per_thread - per_thread // 3)
    rows = dict(toy.conn.execute("SELECT id, email FROM members WHERE email LIKE 't%@example.org'").fetchall())
    assert all(rows.get(i) == email for i, email in successes)
    assert len(rows) == len(successes)
    assert toy.turn == threads * per_thread
