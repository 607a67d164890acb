"""The state check matches inserted rows up to a consistent renaming of their generated ids.

Two returns made in the other order swap the ids the database generates for them, and the rows
that reference those ids (``return_items.return_id``) swap with them: still exactly the intended
change. A row attached to the other parent is not.
"""

from __future__ import annotations

import functools
import json

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401
from agentworld_envs.engine import statediff
from agentworld_envs.catalogue.catalog import load_bundle
from agentworld_envs.tasks.runner import Runner
from agentworld_envs.tasks.seal import seal

RETAIL = "agentworld/retail-v0"

LINKS: statediff.Links = {"keys": {"returns": "id", "items": "id"},
                          "refs": {"return_items": {"return_id": "returns"}, "items": {"return_id": "returns"}}}
FREE = {"returns": ["id"]}


def _diff(first: dict, second: dict, a_items: list[int], b_items: list[int]) -> statediff.Diff:
    """Two returns (``first`` gets id 55, ``second`` 56) and their items."""
    return {"returns": {"insert": [{"id": 55, **first}, {"id": 56, **second}]},
            "return_items": {"insert": [{"return_id": 55, "item_id": i} for i in a_items]
                             + [{"return_id": 56, "item_id": i} for i in b_items]}}


def test_generated_ids_match_up_to_renaming_and_wrong_parents_fail():
    a, b = {"order_id": 1, "amount": 10.0}, {"order_id": 2, "amount": 20.0}
    expected = _diff(a, b, [11], [21, 22])
    swapped = _diff(b, a, [21, 22], [11])              # the same returns, made in the other order
    assert statediff.compare(expected, swapped, FREE)[0] is False   # without the schema: order-dependent
    assert statediff.compare(expected, swapped, FREE, LINKS)[0] is True
    wrong = _diff(b, a, [11], [21, 22])                # item 11 attached to order 2's return
    assert statediff.compare(expected, wrong, FREE, LINKS)[0] is False
    moved = _diff(a, b, [11, 21], [22])                # one item moved to the other return
    assert statediff.compare(expected, moved, FREE, LINKS)[0] is False
    fewer = _diff(a, b, [11], [21])
    assert statediff.compare(expected, fewer, FREE, LINKS)[0] is False
    assert statediff.compare(expected, expected, FREE, LINKS)[0] is True


def test_identical_parents_may_swap_but_their_children_must_follow():
    same = {"order_id": 1, "amount": 10.0}
    expected = _diff(same, same, [11], [21])
    assert statediff.compare(expected, _diff(same, same, [21], [11]), FREE, LINKS)[0] is True
    assert statediff.compare(expected, _diff(same, same, [11, 21], []), FREE, LINKS)[0] is False


def test_a_reference_to_a_generated_id_in_an_update_is_renamed_too():
    expected = {"returns": {"insert": [{"id": 55, "order_id": 1}, {"id": 56, "order_id": 2}]},
                "items": {"update": [[7, {"return_id": 55}], [8, {"return_id": 56}]]}}
    swapped = {"returns": {"insert": [{"id": 55, "order_id": 2}, {"id": 56, "order_id": 1}]},
               "items": {"update": [[7, {"return_id": 56}], [8, {"return_id": 55}]]}}
    crossed = {"returns": {"insert": [{"id": 55, "order_id": 2}, {"id": 56, "order_id": 1}]},
               "items": {"update": [[7, {"return_id": 55}], [8, {"return_id": 56}]]}}
    assert statediff.compare(expected, swapped, FREE, LINKS)[0] is True
    assert statediff.compare(expected, crossed, FREE, LINKS)[0] is False


def _play(env, task_id: str, actions: list[str]) -> tuple[float, list[str]]:
    env.reset(options={"task_id": task_id})
    info: dict = {}
    reward = 0.0
    for a in actions:
        _, reward, term, trunc, info = env.step(a)
        if term or trunc:
            break
    return reward, [c["type"] + ": " + c["detail"] for c in info.get("checks", []) if not c["passed"]]


def _multi_return_tasks(env) -> list[str]:
    """Retail tasks whose reference makes several returns (each inserting a return and its items)."""
    out = []
    for tid in env.task_ids:
        env.reset(options={"task_id": tid})
        calls = [a for a in env.solution_actions() if "return_delivered_order_items" in a]
        if len(calls) >= 2:
            out.append(tid)
    return out


def test_retail_returns_in_either_order_score_one():
    env = gym.make(RETAIL).unwrapped
    tasks = _multi_return_tasks(env)
    assert tasks, "retail has tasks that return items of several orders"
    for tid in tasks:
        env.reset(options={"task_id": tid})
        actions = env.solution_actions()
        assert _play(env, tid, actions)[0] == 1.0
        idx = [i for i, a in enumerate(actions) if "return_delivered_order_items" in a]
        swapped = list(actions)
        swapped[idx[0]], swapped[idx[-1]] = actions[idx[-1]], actions[idx[0]]
        score, failed = _play(env, tid, swapped)
        assert score == 1.0, (tid, failed)


def test_retail_items_returned_under_the_wrong_request_fail():
    env = gym.make(RETAIL).unwrapped
    tid = _multi_return_tasks(env)[0]
    env.reset(options={"task_id": tid})
    actions = env.solution_actions()
    idx = [i for i, a in enumerate(actions) if "return_delivered_order_items" in a]
    first = json.loads(actions[idx[0]][len("<tool_call>"):-len("</tool_call>")])
    if len(first["arguments"]["item_ids"]) < 2:
        first = json.loads(actions[idx[-1]][len("<tool_call>"):-len("</tool_call>")])
    items = first["arguments"]["item_ids"]
    assert len(items) >= 2
    # the same items of that order, returned as two requests instead of one: other rows, other links
    split = [{**first, "arguments": {**first["arguments"], "item_ids": items[:1]}},
             {**first, "arguments": {**first["arguments"], "item_ids": items[1:]}}]
    target = idx[0] if json.loads(actions[idx[0]][11:-12]) == first else idx[-1]
    changed = actions[:target] + ["<tool_call>" + json.dumps(s) + "</tool_call>" for s in split] + actions[target + 1:]
    score, failed = _play(env, tid, changed)
    assert score == 0.0 and any(f.startswith("state") for f in failed), failed


# ------------------------------------------------------------------------------------------ synthesised


def _create_pairs(spec: dict) -> list[tuple[dict, dict, str]]:
    """(parent create tool, child create tool, the child's parameter naming the parent) in a spec."""
    creates = {t["impl"]["table"]: t for t in spec["tools"] if t["impl"].get("kind") == "create"}
    tables = {t["name"]: t for t in spec["tables"]}
    out = []
    for child_table, child in creates.items():
        for col in tables[child_table]["columns"]:
            parent_table = str(col.get("references") or "").split(".")[0]
            if parent_table in creates and parent_table != child_table and \
                    col["name"] in child["parameters"].get("properties", {}):
                out.append((creates[parent_table], child, col["name"]))
    return out


def _arguments_from_row(runner: Runner, tool: dict, tag: str) -> dict:
    """Arguments for a create tool copied from an existing row of its table, unique text made new and,
    for ``tag`` "B", its first plain number one more (so A and B differ in a column the check compares:
    free text does not count)."""
    table = tool["impl"]["table"]
    cols = {c["name"]: c for t in runner.spec["tables"] if t["name"] == table for c in t["columns"]}
    cur = runner.initial.execute(f'SELECT * FROM "{table}" LIMIT 1')
    row = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    args = {}
    for p, schema in tool["parameters"].get("properties", {}).items():
        value = row.get(p)
        if value is None:
            continue
        if cols.get(p, {}).get("unique") and isinstance(value, str):
            value = f"{value}-{tag}"
        if schema.get("type") == "boolean":
            value = bool(value)
        args[p] = value
    refs = {c for c, col in cols.items() if col.get("references") or col.get("primary_key")}
    number = next((p for p, v in args.items() if p not in refs and isinstance(v, (int, float))
                   and not isinstance(v, bool) and not cols.get(p, {}).get("enum")), None)
    if tag == "B" and number is not None:
        args[number] = args[number] + 1
    return args


def _steps(parent: str, child: str, fk: str, parents: dict, children: dict, order: tuple[str, str],
           links: dict[str, int]) -> list[dict]:
    """Create the parents in ``order``, then child A under ``links["A"]`` and child B under ``links["B"]``."""
    made = [{"name": parent, "arguments": parents[k]} for k in order]
    kids = [{"name": child, "arguments": {**children[k], fk: links[k]}} for k in "AB"]
    return made + kids + [{"name": "submit", "arguments": {"outcome": "done"}}]


def _synth_case():
    """A synthesised env with a create tool whose rows reference another created table, and a task that
    creates two parents and one child under each (several inserts with generated ids)."""
    for env_id in ["agentworld/handmade-ceramics-webshop-v0", "agentworld/custom-print-tshirt-store-v0",
                   "agentworld/wine-club-subscriptions-v0", "agentworld/board-game-preorder-store-v0",
                   "agentworld/mattress-trial-store-v0"]:
        bundle = load_bundle(env_id)
        runner = Runner(bundle.spec, bundle.golden, bundle.tools)
        for parent, child, fk in _create_pairs(bundle.spec):
            pa, pb = _arguments_from_row(runner, parent, "A"), _arguments_from_row(runner, parent, "B")
            ca, cb = _arguments_from_row(runner, child, "A"), _arguments_from_row(runner, child, "B")
            probe = runner.run(None, [{"name": parent["name"], "arguments": pa}])
            first = probe.results[0] if probe.results else {}
            if isinstance(first, dict) and isinstance(first.get("created"), dict):
                first = first["created"]
            if not isinstance(first, dict) or "error" in first or "id" not in first:
                continue
            base = first["id"]   # the id the database generates for the first insert

            steps = functools.partial(_steps, parent["name"], child["name"], fk, {"A": pa, "B": pb}, {"A": ca, "B": cb})
            reference = steps(("A", "B"), {"A": base, "B": base + 1})
            out = runner.run(None, reference, diff=True)
            if any(isinstance(r, dict) and "error" in r for r in out.results):
                continue
            task = seal(runner, {"id": "syn-renaming", "instruction": "Create both records and their children.",
                                 "checks": [], "solution": reference})
            return runner, task, steps, base
        runner.close()
    pytest.skip("no synthesised env of the sample has a creatable parent/child pair")


def test_synthesised_inserts_in_either_order_score_one_and_wrong_parents_fail():
    runner, task, steps, base = _synth_case()
    try:
        assert runner.run(task, task["solution"]).score == 1.0
        # the parents created in the other order: B gets the first id, A the second
        swapped = steps(("B", "A"), {"A": base + 1, "B": base})
        state_check = next(c for c in task["checks"] if c["type"] == "state")
        literal = statediff.compare(state_check["expected"], runner.run(None, swapped, diff=True).diff,
                                    state_check.get("free"))
        assert literal[0] is False   # compared id by id, the order of the creates decides
        out = runner.run(task, swapped)
        assert out.score == 1.0, out.checks
        # the children attached to each other's parent
        crossed = steps(("A", "B"), {"A": base + 1, "B": base})
        assert runner.run(task, crossed).score == 0.0
        both = steps(("A", "B"), {"A": base, "B": base})   # both children under one parent
        assert runner.run(task, both).score == 0.0
        assert state_check.get("free"), "the inserted rows' generated ids are free columns"
    finally:
        runner.close()
