"""Run the spec validators over every registry spec without building any database.

Synthesised specs are composed exactly as :func:`agentworld_envs.synthesis.builder.synthesize`
composes them, except that every *candidate* tool is kept (synthesis drops the ones whose unit
tests fail against the golden state, which would need the database): validating the superset is
the stricter check. Hand-built specs are built by their domain (no database needed either).

    PYTHONPATH=. python scripts/check_registry_specs.py [--limit N]
"""

from __future__ import annotations

import argparse
import sys
import time

import env_registry

from agentworld_envs.catalogue import catalog
from agentworld_envs.plugins import check_plugins, check_sql
from agentworld_envs.engine.spec import SpecError, validate_spec
from agentworld_envs.synthesis.builder import compose_spec
from agentworld_envs.synthesis.toolgen import generate_tools


def synth_spec_without_database(theme: dict) -> dict:
    spec, entities = compose_spec(theme)
    spec["tools"] = generate_tools(entities, theme["title"])
    return spec


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    entries = list(env_registry.manifest())[: args.limit]
    t0, failed = time.perf_counter(), 0
    for n, entry in enumerate(entries, 1):
        try:
            if entry["source"] == "synth":
                spec = synth_spec_without_database(env_registry.theme(entry["name"]))
                validate_spec(spec)
            else:
                spec = catalog.build_spec(entry["name"])
            check_plugins(spec)
            check_sql(spec)
        except SpecError as exc:
            failed += 1
            print(f"FAIL {entry['id']}: {exc}", flush=True)
        if n % 200 == 0:
            print(f"{n}/{len(entries)} checked, {failed} failed, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"checked {len(entries)} specs in {time.perf_counter() - t0:.1f} s; {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
