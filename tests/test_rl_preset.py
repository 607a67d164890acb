"""The README's main job, shortened: the tiny-cpu preset end to end on real registry environments."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_tiny_cpu_preset_on_registry_envs(tmp_path, monkeypatch):
    from agentworld_rl.config import make_config
    from agentworld_rl.trainer import train

    monkeypatch.chdir(tmp_path)
    cfg = make_config("tiny-cpu", None, {"steps": 2, "sft_steps": 3, "max_eval_tasks": 2, "max_envs": 2,
                                        "max_tasks_per_env": 2, "output_dir": str(tmp_path / "run"),
                                        "progress": False})
    summary = train(cfg)
    out = tmp_path / "run"
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for name in ("report.md", "curves.png", "eval_base.json", "eval_after.json"):
        assert (out / name).stat().st_size > 0, name
    after = json.loads((out / "eval_after.json").read_text())["held-out"]
    assert after["episodes"] == 2
    import env_registry

    assert all(env_registry.entry(env_id)["split"] == "arena" for env_id in after["per_env"])  # held out
    assert 0.0 <= after["success_rate"] <= 1.0
    report = (out / "report.md").read_text()
    assert "| **all** |" in report and "| held-out | 2 |" in report and "95 % CI" in report
    assert summary["output_dir"]
