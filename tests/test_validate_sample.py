"""CI's registry validation (lint included): a fixed random sample of 100 environments plus all of one category.

The full run (all 2,000) is ``agentworld validate --all --json --jobs 2``; see the README.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CATEGORY = "healthcare"


@pytest.mark.slow
def test_validate_ci_sample():
    cmd = [sys.executable, "-m", "agentworld_envs.cli", "validate", "--sample", "100", "--seed", "0",
           "--l1", CATEGORY, "--json", "--jobs", "2"]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=3000)
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(records) >= 180, out.stderr[-2000:]
    assert sum(r["env_id"].startswith("agentworld/") for r in records) == len(records)
    bad = [r for r in records if not r["ok"]]
    assert not bad, json.dumps(bad[:3])[:3000]
    for r in records:
        assert r["check_env"] and r["deterministic"], r["env_id"]
        assert r["tasks"] >= 10, r["env_id"]
        assert r["solution_pass"] == r["noop_fail"] == r["random_fail"] == r["nearmiss_fail"] == r["tasks"], r
        assert r["lint_violations"] == 0, r.get("lint")
    assert out.returncode == 0
