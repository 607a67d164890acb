"""agentworld_rl.seeds: one preset over several seeds, pooled gain, and the output directory it owns.

The training runs are stood in for (a fake ``train`` that writes each seed's evaluations), so this
checks the driver: resume/overwrite choices per seed, the pooled interval, and that a directory of
someone else's files is refused without touching it.
"""

from __future__ import annotations

import json

import pytest

from agentworld_rl import seeds, trainer
from agentworld_rl.errors import TrainError


def _ev(tasks: dict[str, bool]) -> dict:
    n = sum(tasks.values())
    return {"tasks": tasks, "episodes": len(tasks), "successes": n, "success_rate": n / len(tasks)}


@pytest.fixture
def fake_train(monkeypatch):
    calls = []

    def train(cfg):
        calls.append(cfg)
        from pathlib import Path
        out = Path(cfg.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        tasks = [f"t{i}" for i in range(20)]
        before = {t: i < 2 for i, t in enumerate(tasks)}
        after = {t: i < 12 + cfg.seed for i, t in enumerate(tasks)}
        (out / "eval_before.json").write_text(json.dumps({"held-out": _ev(before)}))
        (out / "eval_after.json").write_text(json.dumps({"held-out": _ev(after)}))
        (out / "metrics.jsonl").write_text("{}\n")
        return {}

    monkeypatch.setattr(trainer, "train", train)
    return calls


def test_seeds_pool_the_gain_and_record_their_files(tmp_path, fake_train):
    out = tmp_path / "seeds"
    result = seeds.run_seeds("tiny-cpu", [0, 1], str(out))
    r = result["held-out"]
    assert [row["seed"] for row in r["seeds"]] == [0, 1]
    assert r["pairs"] == 40
    g, lo, hi = r["pooled_gain"]
    assert g == pytest.approx((10 + 11) / 40) and 0 < lo < g < hi
    assert "zero is outside the interval" in (out / "seeds.md").read_text()
    assert json.loads((out / "seeds.json").read_text()) == json.loads(json.dumps(result))
    from agentworld_envs.util.outputs import read_manifest
    manifest, why = read_manifest(out)
    assert manifest is not None and manifest["kind"] == "seeds", why
    assert {"seeds.json", "seeds.md", "seed-0/eval_after.json"} <= set(manifest["files"])
    # Again: the directory is its own earlier run; a seed with metrics but no checkpoint starts over.
    seeds.run_seeds("tiny-cpu", [0], str(out))
    assert fake_train[-1].overwrite and not fake_train[-1].resume_from


def test_seeds_refuse_a_directory_of_other_files(tmp_path, fake_train):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(TrainError, match="did not write"):
        seeds.run_seeds("tiny-cpu", [0], str(out))
    assert not fake_train and sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_seeds_cli_user_error_is_one_line_exit_2(tmp_path, fake_train, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(SystemExit) as e:
        seeds.main(["--preset", "tiny-cpu", "--seeds", "0", "--output-dir", str(out)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
