"""Draw task instructions that exercise policy rules, with the rule each exercises.

    python scripts/sample_instructions.py --seed 15 --n 20

Envs are drawn from the manifest with the seed (built on first use), and one rule-exercising task
(``knobs.rule``: a business rule or a lifecycle rule) is drawn per env until ``n`` are printed.
"""

from __future__ import annotations

import argparse
import json
import random

import env_registry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from agentworld_envs.catalogue import catalog

    rng = random.Random(args.seed)
    names = [e["name"] for e in env_registry.manifest() if e["source"] == "synth"]
    rng.shuffle(names)
    out = []
    for name in names:
        if len(out) >= args.n:
            break
        tasks = [t for t in catalog.load_bundle(name).tasks if (t.get("knobs") or {}).get("rule")]
        if tasks:
            t = rng.choice(tasks)
            out.append({"env": name, "shape": t["knobs"]["shape"], "family": t["knobs"]["family"],
                        "instruction": t["instruction"], "rule": t["knobs"]["rule"]})
    for i, row in enumerate(out, 1):
        print(json.dumps(row) if args.json else
              f"{i}. [{row['env']} · {row['family']}] {row['instruction']}\n   rule: {row['rule']}")


if __name__ == "__main__":
    main()
