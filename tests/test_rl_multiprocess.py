"""Two training processes (gloo on CPU), launched as the README says: ``ACCELERATE_USE_CPU=1 torchrun
--nproc_per_node 2 -m agentworld_rl.cli train ...``.

Checks what data parallelism must guarantee: each rank samples its own episodes, the replicas hold
identical weights after every step (and the weights do move), only rank 0 writes the run's files
(each rank its own RNG state), and a resumed run reproduces the step it resumes into.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_cache")]

STEPS = 3


def _launch(out: Path, *extra: str) -> subprocess.CompletedProcess:
    options = {"--env-ids": "agentworld_rl/toy-letters-v0", "--steps": str(STEPS), "--save-every": "1",
               "--batch-size": "2", "--group-size": "4", "--micro-batch-size": "3", "--output-dir": str(out)}
    flags = []
    for i, arg in enumerate(extra):
        if arg in options and i + 1 < len(extra):
            options[arg] = extra[i + 1]
        elif i == 0 or extra[i - 1] not in options:
            flags.append(arg)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "agentworld_rl.cli", "train", "--preset", "toy-bandit", "--log-samples", "--no-progress",
           *[x for kv in options.items() for x in kv], *flags]
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp") / "run"
    r = _launch(out)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_ranks_sample_differently_and_stay_identical(two_rank_run):
    out = two_rank_run
    rows = _rows(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))  # one row per step: rank 0 alone writes
    digests = [r["replica_digests"] for r in rows]
    assert all(len(d) == 2 and d[0] == d[1] for d in digests), digests  # identical weights after each step
    assert len({d[0] for d in digests}) == STEPS, digests  # and they moved every step
    assert all(r["updated_sequences"] > 0 for r in rows)
    samples = _rows(out / "samples.jsonl")
    assert len(samples) == STEPS * 2 * 2 * 4  # steps x ranks x prompts x group, each written once
    for step in range(1, STEPS + 1):
        by_rank = {rank: {s["tokens_sha1"] for s in samples if s["step"] == step and s["rank"] == rank}
                   for rank in (0, 1)}
        assert by_rank[0] and by_rank[1] and not by_rank[0] & by_rank[1], (step, by_rank)


def test_only_rank_zero_writes_the_run_files(two_rank_run):
    out = two_rank_run
    from agentworld_envs.util.outputs import MANIFEST, read_manifest

    top = sorted(p.name for p in out.iterdir())
    assert top == sorted([MANIFEST, "checkpoints", "config.yaml", "curves.png", "metrics.jsonl", "report.md",
                          "samples.jsonl", "summary.json"]), top
    manifest, why = read_manifest(out)  # the run's own record of what it wrote, so --overwrite removes only that
    assert manifest is not None, why
    assert {"metrics.jsonl", "samples.jsonl", "summary.json", f"checkpoints/step-{STEPS}/trainable.pt",
            "checkpoints/step-1/rng-1.pt"} <= set(manifest["files"]), sorted(manifest["files"])
    for step in range(1, STEPS + 1):
        files = sorted(p.name for p in (out / "checkpoints" / f"step-{step}").iterdir())
        assert files == ["hashes.json", "optimizer.pt", "rng-0.pt", "rng-1.pt", "scheduler.pt", "state.json",
                         "trainable.pt"], files
    assert not list((out / "checkpoints").glob("*.tmp"))


def test_two_rank_resume_reproduces_the_step(two_rank_run, tmp_path):
    full = two_rank_run
    out = tmp_path / "run"
    shutil.copytree(full, out)
    shutil.rmtree(out / "checkpoints" / f"step-{STEPS}")
    (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(full / "metrics.jsonl")[:-1]))
    r = _launch(out, "--resume-from", "latest")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"resumed from {out / 'checkpoints' / f'step-{STEPS - 1}'}" in r.stdout
    a, b = _rows(full / "metrics.jsonl")[-1], _rows(out / "metrics.jsonl")[-1]
    assert b["step"] == STEPS
    for key in ("loss", "reward_mean", "grad_norm", "replica_digests"):
        assert a[key] == b[key], key
    wa = torch.load(full / "checkpoints" / f"step-{STEPS}" / "trainable.pt")
    wb = torch.load(out / "checkpoints" / f"step-{STEPS}" / "trainable.pt")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_a_rank_with_nothing_to_train_is_skipped_not_fatal(tmp_path):
    """Regression: under DDP a rank whose micro-batches have nothing to train (here its bandit group's
    rewards are all 0, so every advantage is 0) used to crash the step (`element 0 of tensors does not
    require grad`). It now skips them like one process does, and still takes part in the gradient sync.
    (With LoRA here: DDP over a model whose base weights are frozen.)"""
    out = tmp_path / "run"
    cmd_extra = ["--env-ids", "agentworld_rl/toy-letters-v0,agentworld_rl/toy-bandit-v0", "--batch-size", "1",
                 "--steps", "2", "--save-every", "0", "--use-lora", "--lora-r", "4", "--learning-rate", "0.05"]
    r = _launch(out, *cmd_extra)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    samples = _rows(out / "samples.jsonl")
    rows = _rows(out / "metrics.jsonl")
    lopsided = 0
    for row in rows:
        varies = {rank: len({s["reward"] for s in samples if s["step"] == row["step"] and s["rank"] == rank}) > 1
                  for rank in (0, 1)}
        lopsided += varies[0] != varies[1]
        assert row["replica_digests"][0] == row["replica_digests"][1]
    assert lopsided, "the setup must give one rank a group with reward variance and the other none"
    assert rows[0]["replica_digests"] != rows[1]["replica_digests"]  # the adapters did train


def test_two_ranks_refuse_an_earlier_run_without_resume_or_overwrite(two_rank_run, tmp_path):
    """Every rank checks the output directory before the main process claims it: an earlier run is
    refused in one line (exit status 2) and left as it was."""
    out = tmp_path / "run"
    shutil.copytree(two_rank_run, out)
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    r = _launch(out)
    assert r.returncode != 0
    assert "already holds a run" in r.stdout + r.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
