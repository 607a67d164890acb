"""The arena: evaluation records, scripted calibration, round tasks, task overlays, diagnosis."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
import env_registry
from agentworld_envs.engine.actions import format_call, parse_calls
from agentworld_envs.catalogue.catalog import load_bundle
from agentworld_envs.arena.diagnosis import diagnose, write_html
from agentworld_envs.arena.evaluation import (NoopPolicy, OpenAIPolicy, ReferencePolicy, evaluate, read_records,
                                        round_tasks, select_tasks, summarize, write_run)
from agentworld_envs.catalogue.overlay import OverlayError, write_overlay

ARENA = [e["id"] for e in env_registry.select(split="arena")][:3]


def _json(records):
    return [r.to_json() for r in records]


def test_reference_scores_one_and_noop_zero_deterministically():
    pairs, _ = select_tasks(ARENA, tasks_per_env=4)
    a = evaluate(ReferencePolicy(), pairs, seed=3)
    b = evaluate(ReferencePolicy(), pairs, seed=3)
    assert summarize(a)["success_rate"] == 1.0 and _json(a) == _json(b)
    noop = evaluate(NoopPolicy(), pairs)
    assert summarize(noop)["success_rate"] == 0.0
    rec = a[0].to_json()
    for key in ("env_id", "task_id", "kind", "difficulty", "turns", "calls", "checks", "reward", "success", "state_hash"):
        assert key in rec
    assert all({"tool", "error"} <= set(c) for c in rec["calls"])


def test_hidden_policy_evaluation_leaves_out_trap_tasks():
    import gymnasium as gym
    every, _ = select_tasks(ARENA, tasks_per_env=0)
    kept, _ = select_tasks(ARENA, tasks_per_env=0, skip_traps=True)
    assert set(kept) < set(every)  # the arena has traps, and only they go
    for env_id, task_id in every:
        env = gym.make(env_id, show_policy=False)
        _, info = env.reset(options={"task_id": task_id})
        assert ((env_id, task_id) in kept) == (not info["needs_policy"])


def test_round_tasks_are_seeded_fresh_and_disjoint():
    env = ARENA[0]
    own = {t["instruction"] for t in load_bundle(env).tasks}
    r1, r1b, r2 = round_tasks(env, 1, 4), round_tasks(env, 1, 4), round_tasks(env, 2, 4)
    assert r1 == r1b and r1 != r2 and len(r1) == 4
    assert not own & {t["instruction"] for t in r1}
    assert all(t["id"].startswith("r1-") for t in r1)


def test_overlay_tasks_reach_async_vector_workers(tmp_path):
    env_id = ARENA[0]
    tasks = round_tasks(env_id, 5, 2)
    path = write_overlay(tmp_path / "overlay.json", {env_id: tasks})
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="async",
                       vector_kwargs={"shared_memory": True}, task_overlay=str(path), overlay_mode="only")
    try:
        _, infos = vec.reset(seed=0, options={"task_id": tasks[1]["id"]})
        assert list(infos["task_id"]) == [tasks[1]["id"]] * 2
    finally:
        vec.close()
    env = gym.make(env_id, task_overlay=str(path)).unwrapped
    assert set(env.task_ids) >= {t["id"] for t in tasks} | set(load_bundle(env_id).task_index)
    with pytest.raises(OverlayError):
        gym.make(env_id, task_overlay=str(tmp_path / "missing.json"))


class CrippledPolicy(ReferencePolicy):
    """The reference, except that every call of one tool gets an unknown argument (so it always fails)."""

    def __init__(self, tool: str):
        self.tool, self.name = tool, f"crippled:{tool}"

    def act(self, states):
        out = []
        for action in super().act(states):
            call = parse_calls(action)[0]
            out.append(format_call(call.name, {"no_such_argument": 1}) if call.name == self.tool else action)
        return out


def test_diagnosis_ranks_a_crippled_tool_weakest(tmp_path):
    pairs, _ = select_tasks(ARENA, tasks_per_env=0)
    reference = evaluate(ReferencePolicy(), pairs)
    writes = {n for e in ARENA for n, t in load_bundle(e).tools.items() if t.writes}
    counts: dict[str, int] = {}
    for r in reference:
        for t in set(r.reference_tools) & writes:   # a failing write fails its episodes
            counts[t] = counts.get(t, 0) + 1
    tool = max(sorted(counts), key=lambda t: counts[t])
    records = evaluate(CrippledPolicy(tool), pairs)
    write_run(tmp_path, records, summarize(records))
    diag = diagnose(read_records(tmp_path))
    assert diag["weakest_tools"][0]["name"] == tool
    assert diag["by_tool"][tool]["success_rate"] == 0.0
    assert diag["errors"]["calls"]["invalid_arguments"] >= counts[tool]
    assert diag["success_rate"] < 1.0 and diag["weakest_envs"]
    page = write_html(diag, tmp_path / "report.html")
    assert "data:image/png;base64," in page.read_text()


class _FakeChat(BaseHTTPRequestHandler):
    """A loopback OpenAI-compatible endpoint that always submits an answer."""

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["tools"] and body["messages"][0]["role"] == "user"
        reply = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "submit", "arguments": "{\"answer\": \"42\"}"}}]}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_openai_compatible_policy_over_loopback():
    server = HTTPServer(("127.0.0.1", 0), _FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        pairs, _ = select_tasks(ARENA[:1], tasks_per_env=2)
        records = evaluate(OpenAIPolicy(f"http://127.0.0.1:{server.server_port}/v1", "fake"), pairs)
    finally:
        server.shutdown()
    assert len(records) == 2 and all(r.submitted and r.answer == "42" for r in records)


def test_cli_eval_and_diagnose(tmp_path):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "agentworld_envs.cli", "eval", *ARENA[:2], "--policy", "reference", "--round", "1",
           "--tasks-per-env", "2", "--out", str(run), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["episodes"] == 4 and summary["success_rate"] == 1.0 and summary["round"] == 1
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "diagnose", str(run), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["episodes"] == 4 and (run / "diagnosis.html").is_file()
    bad = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "diagnose", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert Path(run / "records.jsonl").read_text().count("\n") == 4


def test_targeted_synthesis_plans_from_a_diagnosis_and_gates_every_task(tmp_path):
    from agentworld_envs.arena.targeting import plan_targets, synthesize_targeted
    from agentworld_envs.tasks.probes import attack
    from agentworld_envs.tasks.runner import Runner

    pairs, _ = select_tasks(ARENA, tasks_per_env=4)
    diag = diagnose([r.to_json() for r in evaluate(NoopPolicy(), pairs)])
    plans = plan_targets(diag, round_=1, total=4, envs=2)
    train = {e["id"] for e in env_registry.select(split="train")}
    assert len(plans) == 2 and all(p.env_id in train for p in plans)
    weak_l1 = {r["l1"] for r in (x.to_json() for x in evaluate(NoopPolicy(), pairs))}
    assert {env_registry.entry(p.env_id)["l1"] for p in plans} <= weak_l1
    path, report = synthesize_targeted(plans, round_=1, out=tmp_path / "targets.json")
    assert report["kept"] >= 2
    for plan in plans:
        env = gym.make(plan.env_id, task_overlay=str(path), overlay_mode="only").unwrapped
        b = env.bundle
        runner = Runner(b.spec, b.golden, b.tools)
        try:
            for tid in env.task_ids:
                env.reset(options={"task_id": tid})
                task = env.task
                assert [c["type"] for c in task["checks"][:2]] == ["outcome", "state"]
                probes = attack(runner, task)
                assert probes.hack_fail and probes.paraphrase_pass
                reward = 0.0
                for a in env.solution_actions():
                    _, reward, term, trunc, _ = env.step(a)
                assert reward == 1.0
        finally:
            runner.close()
            env.close()


def test_model_policy_plays_arena_episodes_with_a_local_model():
    from agentworld_rl.policy import ModelPolicy

    # Compact prompts (as tiny models are run): the tiny tokenizer makes the full prompt ~23k tokens, more
    # than its 8,192 positions, and a prompt that does not fit submits at once instead of being cut.
    pairs = select_tasks(ARENA[:1], tasks_per_env=6, skip_traps=True)[0][:2]
    policy = ModelPolicy("tiny", batch_size=2, max_new_tokens=8, tool_descriptions=False)
    records = evaluate(policy, pairs, max_turns=2, max_tools=4, show_policy=False)
    assert len(records) == 2 and all(r.turns == 2 or r.submitted for r in records)
    assert all(r.calls for r in records)   # every action reached the env (as a call or a parse error)
    assert policy.context_overflows == 0
    long = evaluate(ModelPolicy("tiny", batch_size=2, max_new_tokens=8), pairs[:1], max_turns=2)
    assert long[0].submitted and long[0].turns == 1 and not long[0].calls   # 23k tokens > 8,192: submitted
