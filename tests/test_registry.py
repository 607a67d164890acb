"""The 2,000-environment registry: taxonomy, manifest, synthesis determinism, tool validation."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import subprocess
import sys

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401  (registers ids)
import env_registry
from agentworld_envs.synthesis.builder import synthesize
from agentworld_envs.synthesis.schema import schema_signature


def test_manifest_shape():
    envs = env_registry.manifest()
    assert len(envs) == 2000
    assert len({e["id"] for e in envs}) == 2000
    per_l1 = collections.Counter(e["l1"] for e in envs)
    assert len(per_l1) == 20 and min(per_l1.values()) >= 40
    assert len({(e["l1"], e["l2"]) for e in envs}) >= 50
    assert any(e["id"] == "agentworld/retail-v0" and e["source"] == "handbuilt" for e in envs)
    arena = [e for e in envs if e["split"] == "arena"]
    assert 0.08 <= len(arena) / len(envs) <= 0.12
    arena_per_l1 = collections.Counter(e["l1"] for e in arena)
    assert set(arena_per_l1) == set(per_l1)  # stratified: every category holds some out


def test_every_id_is_registered_with_gymnasium():
    assert all(e["id"] in gym.registry for e in env_registry.manifest())


def test_themes_are_distinct_services():
    themes = env_registry.themes()
    assert len({t["title"].lower() for t in themes}) == len(themes)
    assert all(40 <= len(t["description"].split()) <= 90 for t in themes)
    assert all(4 <= len(t["entities"]) <= 7 for t in themes)


def test_domain_library_size():
    modules = env_registry.entity_modules()
    assert len(modules) >= 150
    assert set(json.loads(open(os.path.join(os.path.dirname(env_registry.__file__), "library", "entity_names.json")).read())) == set(modules)
    assert len(env_registry.workflows()) >= 8
    used = {e["module"] for t in env_registry.themes() for e in t["entities"]}
    assert used <= set(modules)


SAMPLE = ["wine-club-subscriptions", "veterinary-clinic-appointments", "monorepo-code-review-queue"]


def _sample_themes():
    names = {t["slug"] for t in env_registry.themes()}
    chosen = [s for s in SAMPLE if s in names]
    return (chosen + [t["slug"] for t in env_registry.themes()[::400]])[:5]


@pytest.mark.parametrize("slug", _sample_themes())
def test_synthesised_env_is_rich_and_every_tool_passed(slug):
    spec, report = synthesize(env_registry.theme(slug))
    assert report.rejected is None
    assert report.tools_kept == report.tools_generated >= 15, report.dropped
    kinds = collections.Counter(t["impl"]["kind"] for t in spec["tools"])
    assert kinds["search"] and kinds["aggregate"] and kinds["create"] and kinds["get"]
    assert len(spec["tables"]) >= 4 and report.rows >= 300
    env = gym.make(f"agentworld/{slug}-v0").unwrapped
    conn = env.bundle.initial
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_distinct_schemas_on_a_sample():
    sigs = {schema_signature(synthesize(t)[0]["tables"]) for t in env_registry.themes()[::100]}
    assert len(sigs) == len(env_registry.themes()[::100])


def test_synthesis_is_byte_identical_across_processes(tmp_path):
    slug = _sample_themes()[0]
    script = (
        "import hashlib, json, sys, env_registry;"
        "from agentworld_envs import state; from agentworld_envs.synthesis.builder import synthesize;"
        f"spec, _ = synthesize(env_registry.theme({slug!r}));"
        "print(hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest(),"
        " hashlib.sha256(state.golden_bytes(spec)).hexdigest())"
    )
    outs = []
    for i in range(2):
        env = {**os.environ, "AGENTWORLD_CACHE": str(tmp_path / f"cache{i}"), "PYTHONHASHSEED": str(i + 1)}
        outs.append(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True).stdout)
    assert outs[0] == outs[1] and len(outs[0].split()) == 2
    spec, _ = synthesize(env_registry.theme(slug))
    from agentworld_envs.engine import state

    here = (hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest() + " "
            + hashlib.sha256(state.golden_bytes(spec)).hexdigest())
    assert outs[0].strip() == here
