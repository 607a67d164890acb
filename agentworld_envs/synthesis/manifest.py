"""Write ``env_registry/manifest.json`` from the taxonomy and themes.

Split: ``arena`` (held out) is 10% of each first-level category, chosen by a hash
of the slug, so the split is stratified and stable when themes are added elsewhere.
Run ``python -m agentworld_envs.synthesis.manifest`` after editing themes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import env_registry

ARENA_SHARE = 0.10
FLAGSHIP = {"name": "retail", "id": "agentworld/retail-v0", "l1": "commerce-retail", "l2": "online-stores",
            "l3": "Online retail back office", "source": "handbuilt"}


def build_manifest() -> list[dict[str, Any]]:
    themes = env_registry.themes()
    by_l1: dict[str, list[dict[str, Any]]] = {}
    for t in themes:
        by_l1.setdefault(t["l1"], []).append(t)
    arena: set[str] = set()
    for l1, group in by_l1.items():
        ranked = sorted(group, key=lambda t: hashlib.sha256(t["slug"].encode()).hexdigest())
        count = round((len(group) + (l1 == FLAGSHIP["l1"])) * ARENA_SHARE)
        arena.update(t["slug"] for t in ranked[:count])
    envs = [{**FLAGSHIP, "split": "train"}]
    seen = {"retail"}
    for t in themes:
        if t["slug"] in seen:
            raise ValueError(f"duplicate theme slug {t['slug']!r}")
        seen.add(t["slug"])
        envs.append({"name": t["slug"], "id": f"agentworld/{t['slug']}-v0",
                     "split": "arena" if t["slug"] in arena else "train",
                     "l1": t["l1"], "l2": t["l2"], "l3": t["title"], "source": "synth"})
    return envs


def write_manifest(path: Path | None = None) -> Path:
    path = path or Path(env_registry.__file__).with_name("manifest.json")
    envs = build_manifest()
    lines = ",\n".join(" " + json.dumps(e, ensure_ascii=False) for e in envs)
    path.write_text('{"envs": [\n' + lines + "\n]}\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    out = write_manifest()
    print(f"wrote {out}")
