"""agentworld/retail-v0: every task solvable, no-ops and near-misses fail, workflow rules hold."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401  (registers the ids)
from agentworld_envs.catalogue import catalog
from agentworld_envs.engine import state
from agentworld_envs.engine.actions import format_call
from agentworld_envs.domains import retail
from agentworld_envs.engine.spec import validate_spec

ENV_ID = "agentworld/retail-v0"
NOOP = '<tool_call>{"name":"submit","arguments":{}}</tool_call>'


@pytest.fixture(scope="module")
def env():
    e = gym.make(ENV_ID).unwrapped
    yield e
    e.close()


@pytest.fixture(scope="module")
def spec():
    return retail.build_spec()


def run(env, task_id: str, steps: list[dict]) -> tuple[float, list[dict]]:
    """Replay ``steps`` (tool-call dicts) on a fresh episode; returns (reward, infos)."""
    env.reset(options={"task_id": task_id})
    reward, infos = 0.0, []
    for s in steps:
        _, reward, term, trunc, info = env.step(format_call(s["name"], s["arguments"]))
        infos.append(info)
        if term or trunc:
            break
    return reward, infos


def call(env, name: str, **args) -> dict:
    obs, _, _, _, info = env.step(format_call(name, args))
    return {"obs": json.loads(obs), "error": info["error"]}


def q(env, sql: str, *params):
    return env.conn.execute(sql, params).fetchall()


# ------------------------------------------------------------------------------ spec shape


def test_spec_shape(spec):
    validate_spec(spec)
    assert spec["id"] == "retail"
    assert spec["taxonomy"] == {"l1": "commerce-retail", "l2": "online-stores", "l3": "Online retail back office"}
    assert len(spec["tools"]) >= 30
    kinds = {t["impl"]["kind"] for t in spec["tools"]}
    assert {"get", "list", "search", "aggregate", "create", "update", "delete", "transition", "python"} <= kinds
    assert len(spec["tasks"]) >= 60
    for t in spec["tasks"]:
        assert t["id"].startswith("retail-") and t["kind"] == "handcrafted" and t["difficulty"] > 0
        assert t["solution"][-1]["name"] == "submit"
        assert any(c["type"] == "footprint" for c in t["checks"]), t["id"]
    traps = [t for t in spec["tasks"] if "trap" in t["tags"]]
    assert len(traps) >= 10
    for t in traps:  # every trap requires an explanation of what could not be done
        assert any(c["type"] == "answer" and c["mode"] == "refusal" for c in t["checks"]), t["id"]
    assert sum(len(t["solution"]) - 1 >= 5 for t in spec["tasks"]) >= 10, "long multi-step workflows"


def test_build_spec_is_cached_and_a_copy(spec, monkeypatch):
    """The tasks are built once per process (the cache), each caller gets its own copy to mutate."""
    import agentworld_envs.domains.retail.tasks as retail_tasks

    def rebuilt(_spec):
        raise AssertionError("build_spec rebuilt the tasks instead of using its cache")

    monkeypatch.setattr(retail_tasks, "build_tasks", rebuilt)
    again = retail.build_spec()
    assert again == spec and again is not spec
    again["tasks"].clear()
    assert retail.build_spec() == spec


# ------------------------------------------------------------------------------ every task


def test_every_task_solves_and_noop_fails(env):
    failures = []
    for tid in env.task_ids:
        env.reset(options={"task_id": tid})
        info = {}
        for action in env.solution_actions():
            _, reward, term, _, info = env.step(action)
            assert info["error"] is None, (tid, action, info)
        if not (term and reward == 1.0):
            failures.append((tid, [c for c in info.get("checks", []) if not c["passed"]]))
        env.reset(options={"task_id": tid})
        _, noop, term, _, _ = env.step(NOOP)
        assert term and noop == 0.0, f"{tid}: immediate submit scored {noop}"
    assert not failures, failures


def _near_misses(task: dict, env) -> list[list[dict]]:
    sol = task["solution"]
    body, final = sol[:-1], sol[-1]
    out = []
    for i, step in enumerate(body):  # drop one write step
        if env.bundle.tools[step["name"]].writes:
            out.append(body[:i] + body[i + 1:] + [final])
    if "answer" in final["arguments"]:  # a wrong or unexplained answer
        out.append(body + [{"name": "submit", "arguments": {"answer": "Done, all set."}}])
    for i, step in enumerate(body):  # change one numeric argument of a write
        if env.bundle.tools[step["name"]].writes:
            for k, v in step["arguments"].items():
                if isinstance(v, int) and k != "stock":
                    changed = dict(step, arguments={**step["arguments"], k: v + 1})
                    out.append(body[:i] + [changed] + body[i + 1:] + [final])
                    break
    return out


def test_every_task_has_a_failing_near_miss(env, spec):
    for task in spec["tasks"]:
        misses = _near_misses(task, env)
        assert misses, task["id"]
        scores = [run(env, task["id"], m)[0] for m in misses]
        assert min(scores) < 1.0, (task["id"], scores)
        writes = [s for s in task["solution"] if s["name"] in env.bundle.tools and env.bundle.tools[s["name"]].writes]
        if writes:  # skipping all writes never passes
            assert run(env, task["id"], [s for s in task["solution"] if s not in writes])[0] < 1.0, task["id"]


# ------------------------------------------------------------------------------ workflow rules


def _first(env, sql: str, *params):
    return env.bundle.initial.execute(sql, params).fetchone()


def test_cancel_delivered_order_is_refused_without_change(env):
    env.reset(options={"task_index": 0})
    (number,) = _first(env, "SELECT order_number FROM orders WHERE status = 'delivered' ORDER BY id")
    before = env.state_hash()
    r = call(env, "cancel_pending_order", order_number=number, reason="no longer needed")
    assert r["error"] == "precondition_failed"
    assert "delivered" in r["obs"]["error"]["message"]
    assert env.state_hash() == before
    # the order number is accepted without '#', and unknown orders are not_found
    assert call(env, "get_order_details", order_number=number[1:])["obs"]["order_number"] == number
    assert call(env, "get_order_details", order_number="#W0000001")["error"] == "not_found"


def test_cancel_restocks_and_refunds(env):
    env.reset(options={"task_index": 0})
    oid, number, pm = _first(env, "SELECT id, order_number, payment_method_id FROM orders WHERE status = 'pending' ORDER BY id")
    items = q(env, "SELECT variant_id FROM order_items WHERE order_id = ?", oid)
    stock = {v: q(env, "SELECT stock FROM variants WHERE id = ?", v)[0][0] for (v,) in items}
    charged = q(env, "SELECT SUM(amount) FROM payment_transactions WHERE order_id = ? AND kind = 'charge'", oid)[0][0]
    r = call(env, "cancel_pending_order", order_number=number, reason="ordered by mistake")
    assert r["error"] is None and r["obs"]["status"] == "cancelled"
    for (v,) in items:
        assert q(env, "SELECT stock FROM variants WHERE id = ?", v)[0][0] == stock[v] + 1
    assert q(env, "SELECT payment_method_id, ROUND(amount, 2) FROM payment_transactions WHERE order_id = ? AND kind = 'refund'",
             oid) == [(pm, round(charged, 2))]
    # a cancelled order cannot be cancelled again, nor modified
    assert call(env, "cancel_pending_order", order_number=number, reason="ordered by mistake")["error"] == "precondition_failed"
    assert call(env, "modify_pending_order_address", order_number=number, address1="1 Main St", city="Reno", state="NV",
                zip="89501")["error"] == "precondition_failed"


def _task(spec, *tags):
    return next(t for t in spec["tasks"] if set(tags) <= set(t["tags"]))


def _step(task, name):
    return next(s for s in task["solution"] if s["name"] == name)


def test_exchange_moves_stock(env, spec):
    task = _task(spec, "exchange", "multi-step")
    ex = _step(task, "exchange_delivered_order_items")["arguments"]
    old_variants = [_first(env, "SELECT variant_id FROM order_items WHERE id = ?", i)[0] for i in ex["item_ids"]]
    env.reset(options={"task_id": task["id"]})
    before = {v: q(env, "SELECT stock FROM variants WHERE id = ?", v)[0][0] for v in old_variants + ex["new_variant_ids"]}
    r = call(env, "exchange_delivered_order_items", **ex)
    assert r["error"] is None
    for v in ex["new_variant_ids"]:
        assert q(env, "SELECT stock FROM variants WHERE id = ?", v)[0][0] == before[v] - 1
    for v in old_variants:
        assert q(env, "SELECT stock FROM variants WHERE id = ?", v)[0][0] == before[v] + 1
    assert {s for (s,) in q(env, f"SELECT status FROM order_items WHERE id IN ({','.join('?' * len(ex['item_ids']))})",
                              *ex["item_ids"])} == {"exchanged"}
    # exchanged items cannot be exchanged or returned again
    assert call(env, "exchange_delivered_order_items", **ex)["error"] == "precondition_failed"


def test_refund_to_gift_card_raises_balance(env, spec):
    task = _task(spec, "return", "gift-card", "multi-step")
    ret = _step(task, "return_delivered_order_items")["arguments"]
    env.reset(options={"task_id": task["id"]})
    (balance,) = q(env, "SELECT balance FROM payment_methods WHERE id = ?", ret["refund_method_id"])[0]
    prices = sum(q(env, "SELECT unit_price FROM order_items WHERE id = ?", i)[0][0] for i in ret["item_ids"])
    r = call(env, "return_delivered_order_items", **ret)
    assert r["error"] is None and r["obs"]["refunded"] == round(prices, 2)
    assert q(env, "SELECT ROUND(balance, 2) FROM payment_methods WHERE id = ?", ret["refund_method_id"])[0][0] == round(balance + prices, 2)


def test_refund_to_foreign_or_unrelated_method_is_refused(env, spec):
    task = _task(spec, "return", "gift-card", "multi-step")
    ret = _step(task, "return_delivered_order_items")["arguments"]
    env.reset(options={"task_id": task["id"]})
    before = env.state_hash()
    cust = q(env, "SELECT customer_id FROM orders WHERE order_number = ?", ret["order_number"])[0][0]
    (other,) = q(env, "SELECT id FROM payment_methods WHERE customer_id != ? ORDER BY id LIMIT 1", cust)[0]
    assert call(env, "return_delivered_order_items", **{**ret, "refund_method_id": other})["error"] == "precondition_failed"
    assert env.state_hash() == before


def test_failing_multi_write_rolls_back(env):
    env.reset(options={"task_index": 0})
    cust, pm = _first(env, "SELECT customer_id, id FROM payment_methods WHERE kind = 'credit_card' ORDER BY id")
    (ok,) = _first(env, "SELECT id FROM variants WHERE status = 'active' AND stock > 0 ORDER BY id")
    (empty,) = _first(env, "SELECT id FROM variants WHERE status = 'active' AND stock = 0 ORDER BY id")
    before = env.state_hash()
    n_orders = q(env, "SELECT COUNT(*) FROM orders")[0][0]
    # the first variant is written (order row, item, stock) before the second fails
    r = call(env, "place_order", customer_id=cust, variant_ids=[ok, empty], payment_method_id=pm)
    assert r["error"] == "precondition_failed" and "out of stock" in r["obs"]["error"]["message"]
    assert env.state_hash() == before
    assert q(env, "SELECT COUNT(*) FROM orders")[0][0] == n_orders
    # and the same call without the empty variant succeeds
    assert call(env, "place_order", customer_id=cust, variant_ids=[ok], payment_method_id=pm)["error"] is None
    assert env.state_hash() != before


def test_gift_card_cannot_overdraw(env, spec):
    task = _task(spec, "trap", "gift-card", "payments")
    env.reset(options={"task_id": task["id"]})
    number = _step(task, "get_order_details")["arguments"]["order_number"]
    code = _step(task, "get_gift_card_balance")["arguments"]["code"]
    (gc,) = q(env, "SELECT id FROM payment_methods WHERE gift_card_code = ?", code)[0]
    before = env.state_hash()
    r = call(env, "modify_pending_order_payment", order_number=number, payment_method_id=gc)
    assert r["error"] == "precondition_failed" and "does not cover" in r["obs"]["error"]["message"]
    assert env.state_hash() == before


def test_used_payment_method_cannot_be_removed(env):
    env.reset(options={"task_index": 0})
    (used,) = _first(env, "SELECT payment_method_id FROM orders ORDER BY id")
    assert call(env, "remove_payment_method", payment_method_id=used)["error"] == "precondition_failed"
    unused = _first(env, "SELECT id FROM payment_methods p WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.payment_method_id = p.id) "
                         "AND NOT EXISTS (SELECT 1 FROM payment_transactions t WHERE t.payment_method_id = p.id) ORDER BY id")
    assert unused is not None
    assert call(env, "remove_payment_method", payment_method_id=unused[0])["error"] is None


def test_swap_to_other_product_is_refused(env):
    env.reset(options={"task_index": 0})
    oid, number, pm = _first(env, "SELECT id, order_number, payment_method_id FROM orders WHERE status = 'pending' ORDER BY id")
    item, variant = q(env, "SELECT id, variant_id FROM order_items WHERE order_id = ? ORDER BY id", oid)[0]
    (other,) = q(env, "SELECT id FROM variants WHERE product_id != (SELECT product_id FROM variants WHERE id = ?) AND stock > 0 "
                      "ORDER BY id LIMIT 1", variant)[0]
    before = env.state_hash()
    r = call(env, "modify_pending_order_items", order_number=number, item_ids=[item], new_variant_ids=[other], payment_method_id=pm)
    assert r["error"] == "precondition_failed"
    assert env.state_hash() == before


# ------------------------------------------------------------------------------ state


def test_golden_db_is_small_and_consistent(env):
    golden = env.bundle.golden
    assert len(golden) <= 700 * 1024, len(golden)
    conn = env.bundle.initial
    counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("customers", "orders", "order_items", "variants")}
    assert counts["customers"] >= 250 and counts["orders"] >= 850, counts
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # stored gift card balances agree with no overdrawn card, and cancelled orders are fully refunded
    assert conn.execute("SELECT COUNT(*) FROM payment_methods WHERE balance < 0").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM orders o WHERE status = 'cancelled' AND (SELECT ROUND(SUM(CASE kind WHEN 'charge' "
                        "THEN amount ELSE -amount END), 2) FROM payment_transactions t WHERE t.order_id = o.id) != 0").fetchone()[0] == 0
    # every delivered order has a delivery date not after the frozen clock
    assert conn.execute("SELECT COUNT(*) FROM fulfilments WHERE delivered_on > ?", (retail.NOW[:10],)).fetchone()[0] == 0


def test_golden_is_deterministic(tmp_path, monkeypatch):
    spec = {k: v for k, v in retail.build_spec().items() if k != "tasks"}
    first = state.build_database(spec)
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "a"))
    catalog.load_bundle.cache_clear()
    try:
        via_cache = catalog.load_bundle("retail").golden
        monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "b"))
        catalog.load_bundle.cache_clear()
        again = catalog.load_bundle("retail").golden
    finally:
        catalog.load_bundle.cache_clear()
    assert first == via_cache == again
    assert list((tmp_path / "b" / "golden").glob("retail-*.sqlite"))


def test_reset_gives_policy_and_instruction():
    e = gym.make(ENV_ID)
    obs, info = e.reset(seed=0)
    assert "# Policy" in obs and "only pending orders can be cancelled" in obs.lower()
    assert info["task_id"].startswith("retail-") and len(info["tools"]) >= 31
    e.close()
