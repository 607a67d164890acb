"""Env workers on Ray, in local mode: loopback only, same episodes as in-process, a dead worker is an error.

One local Ray session serves the module (starting one costs several seconds). It is started the
way ``--env-workers ray`` starts it, bound to 127.0.0.1; the first test checks that every socket
of every Ray process (gcs_server, raylet, agents, workers) stays on loopback.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import signal
import threading
import time

import psutil
import pytest

import env_registry
from agentworld_envs.util.errors import EnvWorkerError
from agentworld_envs.arena.evaluation import ReferencePolicy, evaluate, select_tasks
from agentworld_envs.serving.workers import RayEnvWorkers, start_ray
from agentworld_rl.vector_env import WorkerSlotVectorEnv

# Not importorskip: importing ray here, before start_ray sets its loopback switch, is the very
# mistake start_ray refuses to run after.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")

RETAIL = "agentworld/retail-v0"
TOY = "agentworld_rl/toy-lookup-v0"


def _is_loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


class SocketWatch:
    """Every inet socket of this process and its descendants, sampled every 20 ms from before Ray starts."""

    def __init__(self):
        self.seen: set[tuple] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self) -> None:
        me = psutil.Process()
        for proc in [me, *me.children(recursive=True)]:
            try:
                name = proc.name()
                for c in proc.net_connections(kind="inet"):
                    self.seen.add((name, c.status, (c.laddr.ip, c.laddr.port), (c.raddr.ip, c.raddr.port) if c.raddr else None))
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="module")
def ray_session():
    watch = SocketWatch()
    # More logical CPUs than cores: Ray only uses them to place actors, and tests start several.
    started = start_ray(num_cpus=8)
    yield watch
    watch.stop()
    if started:
        import ray

        ray.shutdown()


@pytest.fixture(scope="module")
def workers(ray_session):
    w = RayEnvWorkers(2, {"max_turns": 4}, ["agentworld_rl.toy_envs"])
    yield w
    w.close()


def test_local_ray_listens_and_talks_on_loopback_only(ray_session, workers):
    opened = workers.open([{"slot": i, "env_id": RETAIL, "seed": i} for i in range(4)])
    workers.step({i: "no tool call" for i in range(4)})
    assert len(opened) == 4
    ray_session.sample()
    seen = set(ray_session.seen)   # from before ray.init until now
    listening = [(name, laddr) for name, status, laddr, _ in seen if status == psutil.CONN_LISTEN]
    assert any("raylet" in name or "gcs" in name for name, _ in listening), listening  # the check sees Ray
    outside = [s for s in seen if not _is_loopback(s[2][0]) or (s[3] and not _is_loopback(s[3][0]))]
    assert not outside, outside


def test_ray_processes_send_stray_http_to_a_loopback_proxy(ray_session, workers):
    # Ray's usage-stats module probes cloud metadata (169.254.169.254) even with usage stats off;
    # every Ray process must have been started with HTTP(S) proxies on loopback (see workers.py).
    names = []
    for proc in psutil.Process().children(recursive=True):
        try:
            env, name = proc.environ(), proc.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if not env:
            continue  # setproctitle (ray::… names) overwrites where /proc/PID/environ points
        names.append(name)
        for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
            assert env.get(var, "").startswith("http://127.0.0.1:"), (name, var, env.get(var))
        assert "127.0.0.1" in env.get("no_proxy", ""), name
    assert any("gcs" in n for n in names) and any("raylet" in n for n in names), names
    assert not os.environ.get("http_proxy", "").startswith("http://127.0.0.1:9")   # this process is left alone


def test_ray_workers_play_the_same_episodes_as_in_process(ray_session):
    arena = [e["id"] for e in env_registry.select(split="arena")][:2]
    pairs, _ = select_tasks(arena, tasks_per_env=2, seed=0)
    local = [r.to_json() for r in evaluate(ReferencePolicy(), pairs, seed=1, batch_size=3)]
    remote = [r.to_json() for r in evaluate(ReferencePolicy(), pairs, seed=1, batch_size=3, env_workers="ray")]
    assert remote == local
    assert len(local) == 4 and all(r["success"] for r in local)


def test_a_worker_killed_mid_episode_is_an_error_and_is_restarted(workers):
    vec = WorkerSlotVectorEnv(4, workers)
    started = vec.start([{"env_id": RETAIL}] * 4, seeds=[0, 1, 2, 3])
    assert all(info["slot_active"] for _, info in started)
    victim = workers.worker_of(1)
    os.kill(workers.pids()[victim], signal.SIGKILL)
    with pytest.raises(EnvWorkerError, match=rf"env worker {victim} died .*slot 1: {RETAIL}.*restarted"):
        vec.step({i: "no tool call" for i in range(4)})
    # The replacement serves new episodes; its episodes are fresh, not the lost ones scored.
    again = vec.start([{"env_id": RETAIL}] * 4, seeds=[0, 1, 2, 3])
    assert [o for o, _ in again] == [o for o, _ in started]
    results = vec.step({i: "no tool call" for i in range(4)})
    assert sorted(results) == [0, 1, 2, 3] and all(r.info["slot_active"] for r in results.values())


def test_an_env_error_in_a_worker_is_raised_as_itself(workers):
    from agentworld_envs.util.errors import UnknownTaskError

    with pytest.raises(UnknownTaskError, match="no-such-task"):
        workers.open([{"slot": 0, "env_id": RETAIL, "task_id": "no-such-task"}])


def _lookup_cfg(out, **kw):
    from agentworld_rl.config import TrainConfig

    base = dict(model="tiny", torch_threads=1, env_ids=[TOY], eval_split="", batch_size=2, group_size=2, max_turns=2,
                max_new_tokens=8, steps=2, save_every=0, use_lora=True, lora_r=4, sft_steps=0, learning_rate=5e-3,
                output_dir=str(out), progress=False, env_workers="ray", ray_workers=2)
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.slow
def test_grpo_steps_with_ray_env_workers(ray_session, tmp_path):
    from agentworld_rl.trainer import train

    summary = train(_lookup_cfg(tmp_path / "run"))
    assert summary["config"]["env_workers"] == "ray"
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert all(0.0 <= r["reward_mean"] <= 1.0 and r["policy_tokens_mean"] > 0 for r in rows), rows


@pytest.mark.slow
def test_training_stops_with_one_error_line_when_a_worker_dies_mid_rollout(ray_session, tmp_path):
    import typer
    from typer.testing import CliRunner

    from agentworld_rl.cli import register

    out = tmp_path / "run"
    killed: list[int] = []

    def env_hosts() -> set[int]:
        pids = set()
        for proc in psutil.Process().children(recursive=True):
            try:
                if proc.name().startswith("ray::EnvHost") or "EnvHost" in " ".join(proc.cmdline()):
                    pids.add(proc.pid)
            except psutil.NoSuchProcess:
                continue
        return pids

    others = env_hosts()   # actors of other tests' workers in this session: not the trainer's

    def kill_a_worker_after_the_first_step():
        deadline = time.time() + 300
        while time.time() < deadline and not killed:
            metrics = out / "metrics.jsonl"
            if metrics.exists() and metrics.read_text().strip():
                for pid in sorted(env_hosts() - others):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.05)

    app = typer.Typer()
    register(app)

    @app.callback()
    def _root():
        pass

    killer = threading.Thread(target=kill_a_worker_after_the_first_step, daemon=True)
    killer.start()
    result = CliRunner().invoke(app, [
        "train", "--model", "tiny", "--torch-threads", "1", "--env-ids", TOY, "--eval-split", "", "--batch-size", "2",
        "--group-size", "2", "--max-turns", "2", "--max-new-tokens", "8", "--steps", "500", "--save-every", "0",
        "--sft-steps", "0", "--output-dir", str(out), "--no-progress", "--env-workers", "ray", "--ray-workers", "2"])
    killer.join(timeout=5)
    assert killed
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "env worker" in errors[0] and "died" in errors[0], result.output
    assert "Traceback" not in result.output
    rows = (out / "metrics.jsonl").read_text().splitlines()
    assert 1 <= len(rows) < 500   # stopped at the failure: no step was scored on lost episodes
