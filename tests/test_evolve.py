"""The self-evolving loop end to end on the tiny model: every phase's outputs, the report, and resume."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentworld_rl.errors import TrainError
from agentworld_rl.evolve import EvolveConfig, evolve

SMALL = dict(preset="tiny-cpu", eval_envs=2, eval_tasks_per_env=1, target_tasks=2, target_envs=1, train_steps=1,
             sft_steps=2)


@pytest.mark.slow
def test_evolve_writes_rounds_report_and_resumes(tmp_path):
    out = tmp_path / "evo"
    result = evolve(EvolveConfig(rounds=1, output_dir=str(out), **SMALL))
    rounds = json.loads((out / "rounds.json").read_text())
    assert [r["round"] for r in rounds] == [1, 2] == [r["round"] for r in result["rounds"]]
    assert rounds[0]["targeted_tasks"] >= 1 and "arena_success" in rounds[1] and rounds[0]["by_l1"]
    assert rounds[1]["model"].endswith("round-1/train/final-model")          # π(2) is round 1's trained model
    html = (out / "evolve_report.html").read_text()
    assert "data:image/png;base64," in html
    for phase in ("eval/records.jsonl", "eval/summary.json", "eval/diagnosis.json", "targets.json", "train/final-model"):
        assert (out / "round-1" / phase).exists(), phase
    overlay = json.loads((out / "round-1" / "targets.json").read_text())
    # Targeted tasks are write tasks: after the outcome check, the world's state decides.
    assert all([c["type"] for c in t["checks"]][:2] == ["outcome", "state"]
               for tasks in overlay["envs"].values() for t in tasks)

    # An interruption after round 1's training: the last eval never finished. Resume redoes only that.
    stamp = {p: (out / "round-1" / p).stat().st_mtime_ns for p in ("eval/summary.json", "targets.json")}
    (out / "round-2" / "eval" / "summary.json").unlink()
    again = evolve(EvolveConfig(rounds=1, output_dir=str(out), **SMALL))
    assert [r["arena_success"] for r in again["rounds"]] == [r["arena_success"] for r in rounds]
    assert stamp == {p: (out / "round-1" / p).stat().st_mtime_ns for p in stamp}
    assert (out / "round-2" / "eval" / "summary.json").is_file()


def test_evolve_config_is_validated():
    with pytest.raises(TrainError):
        EvolveConfig(rounds=0)
    with pytest.raises(TrainError):
        EvolveConfig(preset="nope")
    out = subprocess.run([sys.executable, "-m", "agentworld_envs.cli", "evolve", "--rounds", "-1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stderr and "rounds" in out.stderr
