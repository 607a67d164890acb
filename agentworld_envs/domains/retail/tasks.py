"""The retail tasks: hand-written templates instantiated with real entities of the golden state.

Entities are picked deterministically (SQL ordered by id) from the golden database, and every
expected value is derived from the golden state by the rules of the policy, not by running the
tools. ``tests/test_retail.py`` replays each reference solution and checks it scores 1.0.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import Any

from agentworld_envs.engine import state

from .schema import RETURN_WINDOW_DAYS

RETURN_TABLES = ["order_items", "returns", "return_items", "variants", "payment_transactions", "payment_methods"]
CANCEL_TABLES = ["orders", "variants", "payment_transactions", "payment_methods"]
NEW_ADDRESSES = [
    ("418 Maple Avenue", "Apt 3B", "Portland", "OR", "97205"),
    ("77 Harbor View Road", None, "Savannah", "GA", "31401"),
    ("2901 Pine Street", "Unit 12", "Boulder", "CO", "80302"),
    ("15 Lakeside Drive", None, "Madison", "WI", "53703"),
    ("640 Elm Court", "Suite 200", "Austin", "TX", "78701"),
]
REASON_PHRASES = {
    "no longer needed": "I don't need it anymore",
    "ordered by mistake": "I ordered it by mistake",
    "found a better price": "I found it cheaper elsewhere",
    "delivery too slow": "it's taking too long to arrive",
}


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


def submit(answer: str | None = None, *, outcome: str = "done", message: str | None = None) -> dict[str, Any]:
    """The reference ``submit``: the outcome, only the requested value(s) as ``answer``, prose as ``message``."""
    args: dict[str, Any] = {"outcome": outcome}
    if answer is not None:
        args["answer"] = answer
    if message is not None:
        args["message"] = message
    return {"name": "submit", "arguments": args}


def sql(query: str, params: list[Any], expect: list[list[Any]], description: str = "") -> dict[str, Any]:
    check = {"type": "sql", "query": query, "params": params, "expect": expect}
    if description:
        check["description"] = description
    return check


def answer(mode: str, expected: Any = None, **extra: Any) -> dict[str, Any]:
    check: dict[str, Any] = {"type": "answer", "mode": mode, **extra}
    if expected is not None:
        check["expected"] = expected
    return check


def refused(reasons: list[list[Any]], results: list[str], *, about: list[str] | None = None,
            status_not: list[str] | None = None, allowed: list[Any] | None = None,
            evidence: list[Any] | None = None) -> dict[str, Any]:
    """A refusal check: one of ``reasons`` (the blocking record's own values) must be given, none of
    ``results`` claimed. With ``status_not``, the reason is an order status and every other order
    status competes with it, except those listed (the ones the rule allows, which an explanation may
    name); ``allowed``: the policy's own figures an explanation may quote; ``evidence``: values one
    of the episode's lookups must have returned (default: the reasons' values and ``about``)."""
    extra: dict[str, Any] = {"reasons": reasons, "results": results}
    if status_not is not None:
        extra.update(candidates=["orders.status"], exclude=status_not)
    if allowed:
        extra["exclude"] = [*extra.get("exclude", []), *allowed]
    if about:
        extra["about"] = about
    if evidence:
        extra["evidence"] = evidence
    return answer("refusal", **extra)


def footprint(tables: list[str]) -> dict[str, Any]:
    return {"type": "footprint", "tables": sorted(set(tables))}


def money(x: float) -> float:
    return round(x + 0.0, 2)


def fmt(x: float) -> str:
    return f"{money(x):.2f}"


class Golden:
    """Read helpers over the golden state, used to pick entities and derive expectations."""

    def __init__(self, conn: sqlite3.Connection, today: str):
        self.c = conn
        self.today = dt.date.fromisoformat(today)
        self.used_orders: set[int] = set()
        self.used_customers: set[int] = set()

    def all(self, q: str, *p: Any) -> list[dict[str, Any]]:
        cur = self.c.execute(q, p)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def one(self, q: str, *p: Any) -> dict[str, Any]:
        rows = self.all(q, *p)
        assert rows, q
        return rows[0]

    def value(self, q: str, *p: Any) -> Any:
        return self.c.execute(q, p).fetchone()[0]

    def customer(self, cid: int) -> dict[str, Any]:
        return self.one("SELECT c.*, a.zip FROM customers c JOIN addresses a ON a.customer_id = c.id AND a.is_default = 1 "
                        "WHERE c.id = ?", cid)

    def order(self, oid: int) -> dict[str, Any]:
        return self.one("SELECT * FROM orders WHERE id = ?", oid)

    def items(self, oid: int) -> list[dict[str, Any]]:
        return self.all("SELECT i.*, v.product_id, v.options, v.sku, p.name AS product FROM order_items i "
                        "JOIN variants v ON v.id = i.variant_id JOIN products p ON p.id = v.product_id "
                        "WHERE i.order_id = ? ORDER BY i.id", oid)

    def methods(self, cid: int) -> list[dict[str, Any]]:
        return self.all("SELECT * FROM payment_methods WHERE customer_id = ? ORDER BY id", cid)

    def stock(self, vid: int) -> int:
        return self.value("SELECT stock FROM variants WHERE id = ?", vid)

    def variant(self, vid: int) -> dict[str, Any]:
        return self.one("SELECT * FROM variants WHERE id = ?", vid)

    def swaps(self, vid: int) -> list[dict[str, Any]]:
        """Other active, in-stock variants of the same product."""
        return self.all("SELECT * FROM variants WHERE product_id = (SELECT product_id FROM variants WHERE id = ?) "
                        "AND id != ? AND status = 'active' AND stock > 0 ORDER BY id", vid, vid)

    def delivered_on(self, oid: int) -> str | None:
        return self.value("SELECT MAX(delivered_on) FROM fulfilments WHERE order_id = ?", oid)

    def delivered_days(self, oid: int) -> int | None:
        d = self.value("SELECT MAX(delivered_on) FROM fulfilments WHERE order_id = ?", oid)
        return None if d is None else (self.today - dt.date.fromisoformat(d)).days

    def net_paid(self, oid: int) -> dict[int, float]:
        rows = self.all("SELECT payment_method_id AS pm, ROUND(SUM(CASE kind WHEN 'charge' THEN amount ELSE -amount END), 2) AS net "
                        "FROM payment_transactions WHERE order_id = ? GROUP BY 1 ORDER BY 1", oid)
        return {r["pm"]: r["net"] for r in rows}

    def pick_orders(self, where: str, n: int, *params: Any, distinct_customers: bool = True,
                    predicate=None) -> list[dict[str, Any]]:
        out = []
        for o in self.all(f"SELECT * FROM orders o WHERE {where} ORDER BY o.id", *params):
            if o["id"] in self.used_orders or (distinct_customers and o["customer_id"] in self.used_customers):
                continue
            if predicate is not None and not predicate(o):
                continue
            out.append(o)
            self.used_orders.add(o["id"])
            self.used_customers.add(o["customer_id"])
            if len(out) == n:
                return out
        raise AssertionError(f"not enough orders for {where}: {len(out)} < {n}")


def label(item: dict[str, Any]) -> str:
    return f"{item['product']} ({item['options']})"


def method_phrase(pm: dict[str, Any]) -> str:
    if pm["kind"] == "credit_card":
        return f"my {pm['brand']} card ending in {pm['last4']}"
    if pm["kind"] == "paypal":
        return "my PayPal account"
    return f"my gift card {pm['gift_card_code']}"


def stock_check(g: Golden, deltas: dict[int, int]) -> dict[str, Any]:
    ids = sorted(deltas)
    return sql(f"SELECT id, stock FROM variants WHERE id IN ({', '.join('?' * len(ids))}) ORDER BY id", ids,
               [[v, g.stock(v) + deltas[v]] for v in ids], "stock adjusted")


def balance_check(g: Golden, pm_id: int, delta: float) -> dict[str, Any]:
    bal = g.value("SELECT balance FROM payment_methods WHERE id = ?", pm_id)
    return sql("SELECT ROUND(balance, 2) FROM payment_methods WHERE id = ?", [pm_id], [[money(bal + delta)]],
               "gift card balance")


def new_txns_check(g: Golden, oid: int, rows: list[list[Any]]) -> dict[str, Any]:
    last = g.value("SELECT MAX(id) FROM payment_transactions")
    return sql("SELECT payment_method_id, kind, ROUND(amount, 2) FROM payment_transactions WHERE order_id = ? AND id > ? "
               "ORDER BY id", [oid, last], rows, "new charges/refunds")


# ---------------------------------------------------------------------------------------- families


def lookups(g: Golden) -> list[dict[str, Any]]:
    tasks = []
    # gift card balances
    for pm in g.all("SELECT * FROM payment_methods WHERE kind = 'gift_card' AND balance > 0 ORDER BY id")[3:18:5]:
        tasks.append(dict(
            instruction=f"Hi! I got a gift card for my birthday, code {pm['gift_card_code']}. How much money is still on it?",
            solution=[call("get_gift_card_balance", code=pm["gift_card_code"]), submit(fmt(pm["balance"]))],
            checks=[answer("numeric", fmt(pm["balance"])), footprint([])], tags=["lookup", "gift-card"]))
    # delivered-order counts by email
    for row in g.all("SELECT customer_id, COUNT(*) AS n FROM orders WHERE status = 'delivered' GROUP BY customer_id "
                     "HAVING n >= 3 ORDER BY customer_id")[2:30:10]:
        cust = g.customer(row["customer_id"])
        tasks.append(dict(
            instruction=f"This is {cust['email']}. Out of curiosity, how many of my orders have been delivered so far?",
            solution=[call("find_customer_by_email", email=cust["email"]),
                      call("count_orders_by_status", customer_id=cust["id"]), submit(str(row["n"]))],
            checks=[answer("numeric", str(row["n"])), footprint([])], tags=["lookup", "aggregate"]))
    # shipment tracking of in-transit orders
    for o in g.pick_orders("status = 'shipped'", 3):
        f = g.one("SELECT * FROM fulfilments WHERE order_id = ?", o["id"])
        cust = g.customer(o["customer_id"])
        tasks.append(dict(
            instruction=f"Hello, I'm {cust['first_name']} {cust['last_name']}, zip {cust['zip']}. My order {o['order_number']} "
                        "hasn't arrived yet. Which carrier has it and what's the tracking number?",
            solution=[call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"]),
                      call("get_order_details", order_number=o["order_number"]),
                      submit(f"{f['carrier']}, {f['tracking_number']}",
                             message=f"It is in transit with {f['carrier']}, tracking number {f['tracking_number']}.")],
            checks=[answer("contains", [f["carrier"].casefold(), f["tracking_number"].casefold()]), footprint([])],
            tags=["lookup", "shipping"]))
    # pending orders of a customer (name + zip)
    for row in g.all("SELECT customer_id, GROUP_CONCAT(order_number) AS nums, COUNT(*) AS n FROM "
                     "(SELECT * FROM orders WHERE status = 'pending' ORDER BY id) GROUP BY customer_id HAVING n >= 1 "
                     "ORDER BY n DESC, customer_id")[:3]:
        cust = g.customer(row["customer_id"])
        nums = row["nums"].split(",")
        tasks.append(dict(
            instruction=f"Hi, {cust['first_name']} {cust['last_name']} here (zip code {cust['zip']}). Which of my orders haven't "
                        "been processed yet, i.e. are still pending? Please list the order numbers.",
            solution=[call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"]),
                      call("search_orders", customer_id=cust["id"], status="pending"), submit(", ".join(nums))],
            checks=[answer("set", nums), footprint([])], tags=["lookup", "search"]))
    # stock of a variant
    for v in g.all("SELECT v.*, p.name AS product FROM variants v JOIN products p ON p.id = v.product_id "
                   "WHERE v.stock > 0 AND v.status = 'active' ORDER BY v.id")[5:200:65]:
        tasks.append(dict(
            instruction=f"Staff question: how many units of the {v['product']} in {v['options']} do we currently have in stock?",
            solution=[call("search_products", name=v["product"]), call("get_product_details", product_id=v["product_id"]),
                      submit(str(v["stock"]))],
            checks=[answer("numeric", str(v["stock"])), footprint([])], tags=["lookup", "catalogue"]))
    # total refunded on an order (cancelled or returned)
    for o in g.pick_orders("id IN (SELECT order_id FROM returns) AND status = 'delivered'", 1) + g.pick_orders("status = 'cancelled'", 1):
        refunded = g.value("SELECT ROUND(SUM(amount), 2) FROM payment_transactions WHERE order_id = ? AND kind = 'refund'", o["id"])
        cust = g.customer(o["customer_id"])
        tasks.append(dict(
            instruction=f"I'm {cust['email']}. How much money in total has been refunded to me for order {o['order_number']}?",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                      call("sum_transactions", order_id=o["id"]), submit(fmt(refunded))],
            checks=[answer("numeric", fmt(refunded)), footprint([])], tags=["lookup", "payments"]))
    # orderable SKUs of a product
    for p in g.all("SELECT p.* FROM products p WHERE (SELECT COUNT(*) FROM variants v WHERE v.product_id = p.id AND "
                   "(v.stock = 0 OR v.status != 'active')) >= 1 ORDER BY p.id")[1:12:8]:
        skus = [r["sku"] for r in g.all("SELECT sku FROM variants WHERE product_id = ? AND stock > 0 AND status = 'active' "
                                        "ORDER BY id", p["id"])]
        tasks.append(dict(
            instruction=f"Which SKUs of the {p['name']} can customers order right now (active and in stock)? List the SKUs.",
            solution=[call("search_products", name=p["name"]), call("get_product_details", product_id=p["id"]),
                      submit(", ".join(skus))],
            checks=[answer("set", skus), footprint([])], tags=["lookup", "catalogue"]))
    # store-wide pending count
    n = g.value("SELECT COUNT(*) FROM orders WHERE status = 'pending'")
    tasks.append(dict(instruction="Ops check: how many orders in the whole store are pending right now?",
                      solution=[call("count_orders_by_status"), submit(str(n))],
                      checks=[answer("numeric", str(n)), footprint([])], tags=["lookup", "aggregate"]))
    return tasks


def cancel_task(g: Golden, o: dict[str, Any], reason: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Solution steps (without lookups/submit) and checks of cancelling pending order ``o``."""
    items = [i for i in g.items(o["id"]) if i["status"] in ("active", "replacement")]
    deltas: dict[int, int] = {}
    for i in items:
        deltas[i["variant_id"]] = deltas.get(i["variant_id"], 0) + 1
    nets = g.net_paid(o["id"])
    checks = [sql("SELECT status, cancel_reason FROM orders WHERE order_number = ?", [o["order_number"]],
                  [["cancelled", reason]], "order cancelled with the reason"),
              stock_check(g, deltas),
              new_txns_check(g, o["id"], [[pm, "refund", net] for pm, net in sorted(nets.items()) if net > 0])]
    for pm, net in nets.items():
        if g.value("SELECT kind FROM payment_methods WHERE id = ?", pm) == "gift_card":
            checks.append(balance_check(g, pm, net))
    return [call("cancel_pending_order", order_number=o["order_number"], reason=reason)], checks


def simple_writes(g: Golden) -> list[dict[str, Any]]:
    tasks = []
    reasons = list(REASON_PHRASES)
    for k, o in enumerate(g.pick_orders("status = 'pending' AND payment_method_id IN (SELECT id FROM payment_methods "
                                        "WHERE kind = 'gift_card') OR status = 'pending' AND id % 3 = 0", 4)):
        cust = g.customer(o["customer_id"])
        reason = reasons[k % len(reasons)]
        steps, checks = cancel_task(g, o, reason)
        tasks.append(dict(
            instruction=f"Hi, my email is {cust['email']}. Please cancel order {o['order_number']}, {REASON_PHRASES[reason]}.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                      *steps, submit()],
            checks=[*checks, footprint(CANCEL_TABLES)], tags=["write", "cancel"]))
    # shipping address of pending orders
    for k, o in enumerate(g.pick_orders("status = 'pending'", 3)):
        cust = g.customer(o["customer_id"])
        a1, a2, city, st, z = NEW_ADDRESSES[k]
        args = dict(order_number=o["order_number"], address1=a1, city=city, state=st, zip=z)
        if a2:
            args["address2"] = a2
        where = f"{a1}{', ' + a2 if a2 else ''}, {city}, {st} {z}"
        tasks.append(dict(
            instruction=f"Hello, this is {cust['first_name']} {cust['last_name']}, zip {cust['zip']}. I'm staying elsewhere next week; "
                        f"please ship my order {o['order_number']} to {where} instead.",
            solution=[call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"]),
                      call("get_order_details", order_number=o["order_number"]),
                      call("modify_pending_order_address", **args), submit()],
            checks=[sql("SELECT a.customer_id, a.line1, a.line2, a.city, a.state, a.zip FROM orders o JOIN addresses a "
                        "ON a.id = o.ship_address_id WHERE o.order_number = ?", [o["order_number"]],
                        [[cust["id"], a1, a2, city, st, z]], "order ships to the new address"),
                    sql("SELECT status FROM orders WHERE order_number = ?", [o["order_number"]], [["pending"]]),
                    footprint(["orders", "addresses"])], tags=["write", "modify"]))
    # default address of a customer
    for k, cid in enumerate([41, 142]):
        cust = g.customer(cid)
        g.used_customers.add(cid)
        a1, a2, city, st, z = NEW_ADDRESSES[3 + k]
        args = dict(customer_id=cid, address1=a1, city=city, state=st, zip=z)
        if a2:
            args["address2"] = a2
        tasks.append(dict(
            instruction=f"I moved! My account email is {cust['email']}. My new address is {a1}{', ' + a2 if a2 else ''}, {city}, "
                        f"{st} {z}. Please make it my default shipping address.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("update_default_address", **args), submit()],
            checks=[sql("SELECT line1, line2, city, state, zip FROM addresses WHERE customer_id = ? AND is_default = 1", [cid],
                        [[a1, a2, city, st, z]], "exactly one default address, the new one"),
                    footprint(["addresses"])], tags=["write", "account"]))
    # switch payment method of a pending order to another saved method
    n = 0
    for o in g.pick_orders("status = 'pending' AND payment_method_id IN (SELECT id FROM payment_methods WHERE kind != 'gift_card')", 6):
        others = [m for m in g.methods(o["customer_id"]) if m["id"] != o["payment_method_id"] and m["kind"] != "gift_card"]
        if not others or n == 2:
            g.used_orders.discard(o["id"])
            g.used_customers.discard(o["customer_id"])
            continue
        n += 1
        new, cust = others[0], g.customer(o["customer_id"])
        total = g.net_paid(o["id"])[o["payment_method_id"]]
        tasks.append(dict(
            instruction=f"Hi, it's {cust['email']}. For order {o['order_number']}, please charge {method_phrase(new)} instead of the "
                        "payment method I originally used.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_customer_details", customer_id=cust["id"]),
                      call("get_order_details", order_number=o["order_number"]),
                      call("modify_pending_order_payment", order_number=o["order_number"], payment_method_id=new["id"]), submit()],
            checks=[sql("SELECT payment_method_id FROM orders WHERE order_number = ?", [o["order_number"]], [[new["id"]]]),
                    new_txns_check(g, o["id"], [[o["payment_method_id"], "refund", total], [new["id"], "charge", total]]),
                    footprint(["orders", "payment_transactions", "payment_methods"])], tags=["write", "modify", "payments"]))
    # support ticket, order note, resolve ticket
    o = g.pick_orders("status = 'delivered'", 1)[0]
    cust = g.customer(o["customer_id"])
    last_ticket = g.value("SELECT MAX(id) FROM support_tickets")
    tasks.append(dict(
        instruction=f"Customer {cust['email']} called: the parcel for order {o['order_number']} arrived with a crushed box. "
                    "Open a delivery issue ticket about that order summarising the complaint.",
        solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                  call("open_support_ticket", customer_id=cust["id"], order_id=o["id"], topic="delivery issue",
                       summary="Parcel arrived with a crushed box."), submit()],
        checks=[sql("SELECT customer_id, order_id, topic, status FROM support_tickets WHERE id > ?", [last_ticket],
                    [[cust["id"], o["id"], "delivery issue", "open"]]), footprint(["support_tickets"])], tags=["write", "support"]))
    o = g.pick_orders("status = 'processing'", 1)[0]
    last_note = g.value("SELECT MAX(id) FROM order_notes")
    tasks.append(dict(
        instruction=f"Please add an internal note to order {o['order_number']}: the customer requires a signature on delivery.",
        solution=[call("get_order_details", order_number=o["order_number"]),
                  call("add_order_note", order_id=o["id"], body="Customer requires a signature on delivery."), submit()],
        checks=[sql("SELECT order_id, instr(lower(body), 'signature') > 0 FROM order_notes WHERE id > ?", [last_note], [[o["id"], 1]]),
                footprint(["order_notes"])], tags=["write", "notes"]))
    row = g.one("SELECT customer_id, MIN(id) AS tid, topic FROM support_tickets WHERE status = 'open' GROUP BY customer_id "
                "HAVING COUNT(*) = 1 ORDER BY customer_id LIMIT 1 OFFSET 2")
    cust = g.customer(row["customer_id"])
    tasks.append(dict(
        instruction=f"{cust['first_name']} {cust['last_name']} ({cust['email']}) confirmed by phone that their open {row['topic']} "
                    "ticket is sorted. Close it with a short resolution note.",
        solution=[call("find_customer_by_email", email=cust["email"]),
                  call("list_support_tickets", customer_id=cust["id"], status="open"),
                  call("resolve_support_ticket", ticket_id=row["tid"], resolution="Customer confirmed by phone the issue is sorted."),
                  submit()],
        checks=[sql("SELECT status, resolved_at IS NOT NULL FROM support_tickets WHERE id = ?", [row["tid"]], [["resolved", 1]]),
                footprint(["support_tickets"])], tags=["write", "support"]))
    # inventory
    v = g.one("SELECT v.*, p.name AS product FROM variants v JOIN products p ON p.id = v.product_id WHERE v.stock = 0 "
              "AND v.status = 'active' ORDER BY v.id LIMIT 1 OFFSET 4")
    tasks.append(dict(
        instruction=f"A supplier delivery just came in: after the stock take we have 25 units of SKU {v['sku']}. Update the inventory.",
        solution=[call("get_variant_by_sku", sku=v["sku"]), call("set_variant_stock", sku=v["sku"], stock=25), submit()],
        checks=[sql("SELECT stock, status FROM variants WHERE sku = ?", [v["sku"]], [[25, "active"]]), footprint(["variants"])],
        tags=["write", "inventory"]))
    v = g.one("SELECT v.*, p.name AS product FROM variants v JOIN products p ON p.id = v.product_id WHERE v.status = 'active' "
              "ORDER BY v.id LIMIT 1 OFFSET 120")
    tasks.append(dict(
        instruction=f"The manufacturer stopped making the {v['product']} in {v['options']}. Mark that variant as discontinued.",
        solution=[call("search_products", name=v["product"]), call("get_product_details", product_id=v["product_id"]),
                  call("discontinue_variant", sku=v["sku"]), submit()],
        checks=[sql("SELECT status, stock FROM variants WHERE id = ?", [v["id"]], [["discontinued", v["stock"]]]),
                footprint(["variants"])], tags=["write", "inventory"]))
    cust = g.customer(77)
    tasks.append(dict(
        instruction=f"Hi, I'm {cust['email']}; I have a new phone number, 415-555-0199. Please update my account.",
        solution=[call("find_customer_by_email", email=cust["email"]),
                  call("update_customer_contact", customer_id=cust["id"], phone="415-555-0199"), submit()],
        checks=[sql("SELECT phone, email FROM customers WHERE id = ?", [cust["id"]], [["415-555-0199", cust["email"]]]),
                footprint(["customers"])], tags=["write", "account"]))
    return tasks


def _returnable(g: Golden, min_items: int = 1):
    def pred(o: dict[str, Any]) -> bool:
        days = g.delivered_days(o["id"])
        active = [i for i in g.items(o["id"]) if i["status"] == "active"]
        return days is not None and days <= RETURN_WINDOW_DAYS - 2 and len(active) >= min_items
    return pred


def _exchangeable(g: Golden):
    def pred(o: dict[str, Any]) -> bool:
        if not _returnable(g)(o):
            return False
        return any(g.swaps(i["variant_id"]) for i in g.items(o["id"]) if i["status"] == "active")
    return pred


def workflows(g: Golden) -> list[dict[str, Any]]:
    tasks = []
    # return two items, refund to the customer's gift card
    for o in g.pick_orders("status = 'delivered' AND customer_id IN (SELECT customer_id FROM payment_methods WHERE kind = 'gift_card')",
                           3, predicate=_returnable(g, 2)):
        cust = g.customer(o["customer_id"])
        items = [i for i in g.items(o["id"]) if i["status"] == "active"][:2]
        gc = [m for m in g.methods(cust["id"]) if m["kind"] == "gift_card"][0]
        amount = money(sum(i["unit_price"] for i in items))
        deltas: dict[int, int] = {}
        for i in items:
            deltas[i["variant_id"]] = deltas.get(i["variant_id"], 0) + 1
        tasks.append(dict(
            instruction=f"Hi, I'm {cust['first_name']} {cust['last_name']}, zip {cust['zip']}. I'd like to return the "
                        f"{label(items[0])} and the {label(items[1])} from order {o['order_number']}. Please put the refund on my "
                        f"gift card {gc['gift_card_code']}, not my original payment method.",
            solution=[call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"]),
                      call("get_order_details", order_number=o["order_number"]),
                      call("list_payment_methods", customer_id=cust["id"], kind="gift_card"),
                      call("return_delivered_order_items", order_number=o["order_number"], item_ids=[i["id"] for i in items],
                           refund_method_id=gc["id"]), submit()],
            checks=[sql("SELECT id, status FROM order_items WHERE order_id = ? ORDER BY id", [o["id"]],
                        [[i["id"], "returned" if i in items else i["status"]] for i in g.items(o["id"])], "exactly those items returned"),
                    balance_check(g, gc["id"], amount), stock_check(g, deltas),
                    new_txns_check(g, o["id"], [[gc["id"], "refund", amount]]),
                    sql("SELECT kind, refund_method_id, ROUND(amount, 2) FROM returns WHERE order_id = ? AND status = 'requested'",
                        [o["id"]], [["return", gc["id"], amount]]),
                    footprint(RETURN_TABLES)], tags=["write", "return", "gift-card", "multi-step"]))
    # return everything to the original payment method
    for o in g.pick_orders("status = 'delivered' AND payment_method_id IN (SELECT id FROM payment_methods WHERE kind != 'gift_card')",
                           2, predicate=_returnable(g, 1)):
        cust = g.customer(o["customer_id"])
        items = [i for i in g.items(o["id"]) if i["status"] == "active"]
        amount = money(sum(i["unit_price"] for i in items))
        deltas = {}
        for i in items:
            deltas[i["variant_id"]] = deltas.get(i["variant_id"], 0) + 1
        tasks.append(dict(
            instruction=f"Email {cust['email']} here. Nothing in order {o['order_number']} worked out for me; I want to return "
                        "everything that I still have from it and get my money back the way I paid.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                      call("return_delivered_order_items", order_number=o["order_number"], item_ids=[i["id"] for i in items],
                           refund_method_id=o["payment_method_id"]), submit()],
            checks=[sql("SELECT COUNT(*) FROM order_items WHERE order_id = ? AND status = 'active'", [o["id"]], [[0]]),
                    stock_check(g, deltas), new_txns_check(g, o["id"], [[o["payment_method_id"], "refund", amount]]),
                    footprint(RETURN_TABLES)], tags=["write", "return"]))
    # exchange one item for another variant of the same product
    for k, o in enumerate(g.pick_orders("status = 'delivered' AND customer_id IN (SELECT customer_id FROM payment_methods "
                                        "WHERE kind != 'gift_card')", 3, predicate=_exchangeable(g))):
        cust = g.customer(o["customer_id"])
        item = next(i for i in g.items(o["id"]) if i["status"] == "active" and g.swaps(i["variant_id"]))
        new = g.swaps(item["variant_id"])[-1 if k % 2 else 0]
        pm = [m for m in g.methods(cust["id"]) if m["kind"] != "gift_card"][0]
        diff = money(new["price"] - item["unit_price"])
        txns = [] if diff == 0 else [[pm["id"], "charge" if diff > 0 else "refund", abs(diff)]]
        tasks.append(dict(
            instruction=f"Hi, {cust['email']} here. The {label(item)} from order {o['order_number']} doesn't suit me. Can I exchange it "
                        f"for the {new['options']} version of the same product? Use {method_phrase(pm)} for any price difference.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                      call("get_product_details", product_id=item["product_id"]),
                      call("list_payment_methods", customer_id=cust["id"]),
                      call("exchange_delivered_order_items", order_number=o["order_number"], item_ids=[item["id"]],
                           new_variant_ids=[new["id"]], payment_method_id=pm["id"]), submit()],
            checks=[sql("SELECT status FROM order_items WHERE id = ?", [item["id"]], [["exchanged"]]),
                    sql("SELECT variant_id, ROUND(unit_price, 2), status FROM order_items WHERE order_id = ? AND id > ?",
                        [o["id"], g.value("SELECT MAX(id) FROM order_items")], [[new["id"], new["price"], "replacement"]]),
                    stock_check(g, {item["variant_id"]: 1, new["id"]: -1}), new_txns_check(g, o["id"], txns),
                    footprint(RETURN_TABLES)], tags=["write", "exchange", "multi-step"]))
    # exchange two items of one delivered order, the difference settled with the customer's gift card
    n = 0
    for o in g.all("SELECT * FROM orders WHERE status = 'delivered' AND customer_id IN (SELECT customer_id FROM payment_methods "
                   "WHERE kind = 'gift_card') ORDER BY id"):
        if n == 2 or o["id"] in g.used_orders or o["customer_id"] in g.used_customers or not _returnable(g, 2)(o):
            continue
        cand = [i for i in g.items(o["id"]) if i["status"] == "active" and g.swaps(i["variant_id"])]
        if len(cand) < 2:
            continue
        pair = [(cand[0], g.swaps(cand[0]["variant_id"])[0]), (cand[1], g.swaps(cand[1]["variant_id"])[-1])]
        if pair[0][1]["id"] == pair[1][1]["id"]:
            continue
        gc = next(m for m in g.methods(o["customer_id"]) if m["kind"] == "gift_card")
        diff = money(sum(new["price"] - old["unit_price"] for old, new in pair))
        if diff > gc["balance"]:
            continue
        g.used_orders.add(o["id"])
        g.used_customers.add(o["customer_id"])
        n += 1
        cust = g.customer(o["customer_id"])
        deltas: dict[int, int] = {}
        for old, new in pair:
            deltas[old["variant_id"]] = deltas.get(old["variant_id"], 0) + 1
            deltas[new["id"]] = deltas.get(new["id"], 0) - 1
        txns = [] if diff == 0 else [[gc["id"], "charge" if diff > 0 else "refund", abs(diff)]]
        tasks.append(dict(
            instruction=f"Hello, {cust['first_name']} {cust['last_name']} here, zip {cust['zip']}. From my order {o['order_number']} "
                        f"I'd like to exchange the {label(pair[0][0])} for the {pair[0][1]['options']} one, and the "
                        f"{label(pair[1][0])} for the {pair[1][1]['options']} one. Settle any price difference with my gift card.",
            solution=[call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"]),
                      call("get_order_details", order_number=o["order_number"]),
                      call("get_product_details", product_id=pair[0][0]["product_id"]),
                      call("get_product_details", product_id=pair[1][0]["product_id"]),
                      call("list_payment_methods", customer_id=cust["id"], kind="gift_card"),
                      call("exchange_delivered_order_items", order_number=o["order_number"],
                           item_ids=[old["id"] for old, _ in pair], new_variant_ids=[new["id"] for _, new in pair],
                           payment_method_id=gc["id"]), submit()],
            checks=[sql("SELECT id, status FROM order_items WHERE id IN (?, ?) ORDER BY id", [pair[0][0]["id"], pair[1][0]["id"]],
                        sorted([[pair[0][0]["id"], "exchanged"], [pair[1][0]["id"], "exchanged"]])),
                    sql("SELECT r.item_id, i.variant_id, i.status FROM return_items r JOIN order_items i ON i.id = r.replacement_item_id "
                        "JOIN returns x ON x.id = r.return_id WHERE x.order_id = ? AND x.kind = 'exchange' ORDER BY r.item_id", [o["id"]],
                        sorted([[old["id"], new["id"], "replacement"] for old, new in pair])),
                    stock_check(g, {k: v for k, v in deltas.items() if v}), balance_check(g, gc["id"], -diff),
                    new_txns_check(g, o["id"], txns), footprint(RETURN_TABLES)],
            tags=["write", "exchange", "gift-card", "multi-step"]))
    # modify items of a pending order and its address
    n = 0
    for o in g.pick_orders("status = 'pending'", 8):
        cust = g.customer(o["customer_id"])
        cand = [i for i in g.items(o["id"]) if g.swaps(i["variant_id"])]
        pms = [m for m in g.methods(cust["id"]) if m["kind"] != "gift_card"]
        if not cand or not pms or n == 2:
            g.used_orders.discard(o["id"])
            g.used_customers.discard(o["customer_id"])
            continue
        item, new, pm = cand[0], g.swaps(cand[0]["variant_id"])[0], pms[-1]
        a1, a2, city, st, z = NEW_ADDRESSES[n + 1]
        n += 1
        diff = money(new["price"] - item["unit_price"])
        txns = [] if diff == 0 else [[pm["id"], "charge" if diff > 0 else "refund", abs(diff)]]
        addr = dict(order_number=o["order_number"], address1=a1, city=city, state=st, zip=z)
        if a2:
            addr["address2"] = a2
        tasks.append(dict(
            instruction=f"Hi, I'm {cust['first_name']} {cust['last_name']} from zip {cust['zip']}. Two changes to my order "
                        f"{o['order_number']} before it ships: switch the {label(item)} to the {new['options']} option, settling any "
                        f"price difference with {method_phrase(pm)}, and send the order to {a1}{', ' + a2 if a2 else ''}, {city}, {st} {z}.",
            solution=[call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"]),
                      call("get_order_details", order_number=o["order_number"]),
                      call("get_product_details", product_id=item["product_id"]),
                      call("list_payment_methods", customer_id=cust["id"]),
                      call("modify_pending_order_items", order_number=o["order_number"], item_ids=[item["id"]],
                           new_variant_ids=[new["id"]], payment_method_id=pm["id"]),
                      call("modify_pending_order_address", **addr), submit()],
            checks=[sql("SELECT variant_id, ROUND(unit_price, 2), status FROM order_items WHERE id = ?", [item["id"]],
                        [[new["id"], new["price"], "active"]]),
                    sql("SELECT a.line1, a.city, a.zip, o.status FROM orders o JOIN addresses a ON a.id = o.ship_address_id "
                        "WHERE o.id = ?", [o["id"]], [[a1, city, z, "pending"]]),
                    stock_check(g, {item["variant_id"]: 1, new["id"]: -1}), new_txns_check(g, o["id"], txns),
                    footprint(["orders", "order_items", "variants", "payment_transactions", "payment_methods", "addresses"])],
            tags=["write", "modify", "multi-step"]))
    # place a new order of two products, paid with a named method
    for k, cid in enumerate([23]):   # one phone order: a second copy of the template taught nothing new
        cust = g.customer(cid)
        g.used_customers.add(cid)
        pm = [m for m in g.methods(cid) if m["kind"] != "gift_card"][0]
        picks = g.all("SELECT v.*, p.name AS product FROM variants v JOIN products p ON p.id = v.product_id "
                      "WHERE v.status = 'active' AND v.stock > 2 ORDER BY v.id")[10 + 37 * k::90][:2]
        total = money(sum(v["price"] for v in picks))
        new_oid = g.value("SELECT MAX(id) FROM orders") + 1
        tasks.append(dict(
            instruction=f"Phone order from {cust['email']}: one {picks[0]['product']} in {picks[0]['options']} and one "
                        f"{picks[1]['product']} in {picks[1]['options']}, shipped to their default address and paid with "
                        f"{method_phrase(pm).replace('my ', 'their ')}.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_customer_details", customer_id=cid),
                      call("search_products", name=picks[0]["product"]), call("get_product_details", product_id=picks[0]["product_id"]),
                      call("search_products", name=picks[1]["product"]), call("get_product_details", product_id=picks[1]["product_id"]),
                      call("place_order", customer_id=cid, variant_ids=[picks[0]["id"], picks[1]["id"]], payment_method_id=pm["id"]),
                      submit()],
            checks=[sql("SELECT o.customer_id, o.status, o.payment_method_id, a.is_default FROM orders o JOIN addresses a "
                        "ON a.id = o.ship_address_id WHERE o.id >= ?", [new_oid], [[cid, "pending", pm["id"], 1]]),
                    sql("SELECT variant_id, ROUND(unit_price, 2) FROM order_items WHERE order_id >= ? ORDER BY variant_id", [new_oid],
                        sorted([[v["id"], v["price"]] for v in picks])),
                    sql("SELECT payment_method_id, kind, ROUND(amount, 2) FROM payment_transactions WHERE order_id >= ?", [new_oid],
                        [[pm["id"], "charge", total]]),
                    stock_check(g, {v["id"]: -1 for v in picks}),
                    footprint(["orders", "order_items", "variants", "payment_transactions", "payment_methods"])],
            tags=["write", "order", "multi-step"]))
    # new gift card as store credit for a return
    o = g.pick_orders("status = 'delivered' AND customer_id NOT IN (SELECT customer_id FROM payment_methods WHERE kind = 'gift_card')",
                      1, predicate=_returnable(g, 1))[0]
    cust = g.customer(o["customer_id"])
    item = [i for i in g.items(o["id"]) if i["status"] == "active"][0]
    new_pm = g.value("SELECT MAX(id) FROM payment_methods") + 1
    tasks.append(dict(
        instruction=f"Hello, I'm {cust['email']}. I want to return the {label(item)} from order {o['order_number']}, and I'd prefer "
                    "store credit: please issue me a new gift card and put the refund on it.",
        solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                  call("issue_gift_card", customer_id=cust["id"]),
                  call("return_delivered_order_items", order_number=o["order_number"], item_ids=[item["id"]], refund_method_id=new_pm),
                  submit()],
        checks=[sql("SELECT kind, ROUND(balance, 2) FROM payment_methods WHERE customer_id = ? AND kind = 'gift_card'", [cust["id"]],
                    [["gift_card", item["unit_price"]]]),
                sql("SELECT status FROM order_items WHERE id = ?", [item["id"]], [["returned"]]),
                stock_check(g, {item["variant_id"]: 1}),
                footprint(RETURN_TABLES)], tags=["write", "return", "gift-card", "multi-step"]))
    return tasks


def refusal(reason: str, text: str, outcome: str = "refused") -> dict[str, Any]:
    """The reference refusal: the blocking value as ``answer``, the explanation as ``message``."""
    return submit(reason, outcome=outcome, message=text)


def traps(g: Golden) -> list[dict[str, Any]]:
    tasks = []
    for o in g.pick_orders("status = 'delivered'", 3):
        cust = g.customer(o["customer_id"])
        tasks.append(dict(
            instruction=f"Hi, my email is {cust['email']}. Please cancel my order {o['order_number']}, I don't need it anymore.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                      refusal("delivered", f"I cannot cancel order {o['order_number']}: it has already been delivered, and "
                              "only pending orders can be cancelled. You can return the items instead.")],
            checks=[refused([["delivered"]], ["cancelled", "canceled"], status_not=["pending", "cancelled"]), footprint([])],
            tags=["trap", "cancel"]))
    for o in g.pick_orders("status = 'delivered'", 2, predicate=lambda o: (g.delivered_days(o["id"]) or 0) > RETURN_WINDOW_DAYS + 3
                           and any(i["status"] == "active" for i in g.items(o["id"]))):
        cust = g.customer(o["customer_id"])
        item = [i for i in g.items(o["id"]) if i["status"] == "active"][0]
        day, days = g.delivered_on(o["id"]), g.delivered_days(o["id"])
        tasks.append(dict(
            instruction=f"Hello, {cust['first_name']} {cust['last_name']}, zip {cust['zip']}. I'd like to return the {label(item)} "
                        f"from order {o['order_number']} for a refund to my original payment method.",
            solution=[call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"]),
                      call("get_order_details", order_number=o["order_number"]),
                      refusal(day, f"I'm sorry, I cannot accept this return: order {o['order_number']} was delivered on {day}, "
                              f"{days} days ago, and returns are only possible within {RETURN_WINDOW_DAYS} days of delivery.")],
            checks=[refused([[day], [str(days)]], ["returned", "refunded"], allowed=[RETURN_WINDOW_DAYS]), footprint([])],
            tags=["trap", "return"]))
    # exchange to an out-of-stock variant
    def oos(o: dict[str, Any]) -> bool:
        return _returnable(g)(o) and any(
            g.value("SELECT COUNT(*) FROM variants WHERE product_id = ? AND id != ? AND stock = 0", i["product_id"], i["variant_id"])
            for i in g.items(o["id"]) if i["status"] == "active")
    for o in g.pick_orders("status = 'delivered'", 2, predicate=oos):
        cust = g.customer(o["customer_id"])
        item = next(i for i in g.items(o["id"]) if i["status"] == "active" and g.value(
            "SELECT COUNT(*) FROM variants WHERE product_id = ? AND id != ? AND stock = 0", i["product_id"], i["variant_id"]))
        target = g.one("SELECT * FROM variants WHERE product_id = ? AND id != ? AND stock = 0 ORDER BY id", item["product_id"],
                       item["variant_id"])
        tasks.append(dict(
            instruction=f"Hi, it's {cust['email']}. I want to exchange the {label(item)} from order {o['order_number']} for the "
                        f"{target['options']} one. Charge any difference to the card I paid with.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                      call("get_product_details", product_id=item["product_id"]),
                      refusal("0", f"I cannot do this exchange: the {target['options']} variant ({target['sku']}) has 0 units "
                              "in stock, and exchanges are only possible for in-stock variants. Nothing was changed.")],
            checks=[refused([["out of stock"], ["0"]], ["exchanged"], evidence=[target["sku"]]), footprint([])],
            tags=["trap", "exchange"]))
    # refund to a non-original, non-gift-card method
    def other_method(o: dict[str, Any]) -> bool:
        return _returnable(g)(o) and any(m["id"] != o["payment_method_id"] and m["kind"] != "gift_card"
                                         for m in g.methods(o["customer_id"]))
    o = g.pick_orders("status = 'delivered'", 1, predicate=other_method)[0]
    cust = g.customer(o["customer_id"])
    item = [i for i in g.items(o["id"]) if i["status"] == "active"][0]
    other = next(m for m in g.methods(cust["id"]) if m["id"] != o["payment_method_id"] and m["kind"] != "gift_card")
    paid = g.one("SELECT * FROM payment_methods WHERE id = ?", o["payment_method_id"])
    original = paid["last4"] if paid["kind"] == "credit_card" else "PayPal"   # the order's own method
    tasks.append(dict(
        instruction=f"I'm {cust['email']}. Please return the {label(item)} from order {o['order_number']} and refund it to "
                    f"{method_phrase(other)} — only that, nothing else.",
        solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                  call("list_payment_methods", customer_id=cust["id"]),
                  refusal(original, f"I cannot refund to that payment method: order {o['order_number']} was paid with "
                          f"{method_phrase(paid).replace('my ', 'your ')}, and refunds can only go to the original payment "
                          "method or to a gift card. I have not made any change; tell me if you want one of those options.")],
        checks=[refused([[original]], ["returned", "refunded"], evidence=[paid["id"]]), footprint([])],
        tags=["trap", "return", "payments"]))
    # modify address of processing / shipped orders
    for o in g.pick_orders("status = 'processing'", 1) + g.pick_orders("status = 'shipped'", 1):
        cust = g.customer(o["customer_id"])
        a1, a2, city, st, z = NEW_ADDRESSES[1]
        tasks.append(dict(
            instruction=f"Hi, {cust['email']} here. Please change the delivery address of order {o['order_number']} to {a1}, {city}, {st} {z}.",
            solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                      refusal(o["status"], f"I cannot change the address: order {o['order_number']} is already {o['status']}, "
                              "and only pending orders can be modified.")],
            checks=[refused([[o["status"]]], ["changed", "updated", "modified"], status_not=["pending"]), footprint([])],
            tags=["trap", "modify"]))
    # mixed: cancel a pending order (allowed) and a delivered one (not allowed)
    pairs = g.all("SELECT p.id AS pid, d.id AS did FROM orders p JOIN orders d ON d.customer_id = p.customer_id "
                  "WHERE p.status = 'pending' AND d.status = 'delivered' ORDER BY p.id, d.id")
    done = 0
    for row in pairs:
        p, d = g.order(row["pid"]), g.order(row["did"])
        if p["id"] in g.used_orders or p["customer_id"] in g.used_customers or d["id"] in g.used_orders:
            continue
        g.used_orders |= {p["id"], d["id"]}
        g.used_customers.add(p["customer_id"])
        cust = g.customer(p["customer_id"])
        reason = list(REASON_PHRASES)[done]
        steps, checks = cancel_task(g, p, reason)
        tasks.append(dict(
            instruction=f"Hi, I'm {cust['first_name']} {cust['last_name']}, zip {cust['zip']}. Please cancel both {p['order_number']} "
                        f"and {d['order_number']} — {REASON_PHRASES[reason]}.",
            solution=[call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"]),
                      call("get_order_details", order_number=p["order_number"]),
                      call("get_order_details", order_number=d["order_number"]), *steps,
                      refusal("delivered", f"I cancelled {p['order_number']}, but I cannot cancel {d['order_number']} because it "
                              "was already delivered; you can return its items instead.", outcome="partial")],
            checks=[*checks, sql("SELECT status FROM orders WHERE id = ?", [d["id"]], [["delivered"]]),
                    refused([["delivered"]], ["cancelled", "canceled"], about=[d["order_number"]],
                            status_not=["pending", "cancelled"]),
                    footprint(CANCEL_TABLES)], tags=["trap", "mixed", "cancel"]))
        done += 1
        if done == 3:
            break
    # remove a payment method that was used
    o = g.pick_orders("status = 'delivered' AND payment_method_id IN (SELECT id FROM payment_methods WHERE kind = 'credit_card')", 1)[0]
    cust, pm = g.customer(o["customer_id"]), g.one("SELECT * FROM payment_methods WHERE id = ?", o["payment_method_id"])
    paid_with = [r["order_number"] for r in g.all("SELECT DISTINCT o.order_number FROM orders o JOIN payment_transactions t "
                                                  "ON t.order_id = o.id WHERE t.payment_method_id = ? ORDER BY o.id", pm["id"])]
    tasks.append(dict(
        instruction=f"Hi, {cust['email']}. Please delete {method_phrase(pm)} from my account.",
        solution=[call("find_customer_by_email", email=cust["email"]), call("list_payment_methods", customer_id=cust["id"]),
                  call("search_orders", customer_id=cust["id"]),
                  refusal(o["order_number"], f"I cannot remove that card: it was used to pay for order {o['order_number']}, and "
                          "payment methods that were used cannot be removed.")],
        checks=[refused([[n] for n in paid_with], ["removed", "deleted"]), footprint([])], tags=["trap", "payments"]))
    # gift card that does not cover a pending order
    def poor_gift_card(o: dict[str, Any]) -> bool:
        total = g.net_paid(o["id"]).get(o["payment_method_id"], 0)
        return any(m["kind"] == "gift_card" and m["balance"] < total for m in g.methods(o["customer_id"]))
    o = g.pick_orders("status = 'pending'", 1, predicate=poor_gift_card)[0]
    cust = g.customer(o["customer_id"])
    gc = next(m for m in g.methods(cust["id"]) if m["kind"] == "gift_card")
    total = g.net_paid(o["id"]).get(o["payment_method_id"], 0)
    tasks.append(dict(
        instruction=f"Hey, {cust['email']} here. Please pay order {o['order_number']} with my gift card {gc['gift_card_code']} instead.",
        solution=[call("find_customer_by_email", email=cust["email"]), call("get_order_details", order_number=o["order_number"]),
                  call("get_gift_card_balance", code=gc["gift_card_code"]),
                  refusal(f"{gc['balance']:.2f}", f"I cannot switch the payment: the gift card balance ({gc['balance']:.2f}) "
                          f"does not cover the order total ({total:.2f}).")],
        checks=[refused([[f"{gc['balance']:.2f}"], [f"{total:.2f}"]], ["switched", "paid with"]), footprint([])],
        tags=["trap", "payments", "gift-card"]))
    # mixed: return within window to gift card is fine, an item of an order outside the window is not
    for o_ok in g.all("SELECT * FROM orders WHERE status = 'delivered' AND customer_id IN (SELECT customer_id FROM payment_methods "
                      "WHERE kind = 'gift_card') ORDER BY id"):
        if o_ok["id"] in g.used_orders or o_ok["customer_id"] in g.used_customers or not _returnable(g, 1)(o_ok):
            continue
        old = [x for x in g.all("SELECT * FROM orders WHERE customer_id = ? AND status = 'delivered' AND id != ? ORDER BY id",
                                o_ok["customer_id"], o_ok["id"])
               if (g.delivered_days(x["id"]) or 0) > RETURN_WINDOW_DAYS + 3 and any(i["status"] == "active" for i in g.items(x["id"]))]
        if not old:
            continue
        g.used_orders |= {o_ok["id"], old[0]["id"]}
        g.used_customers.add(o_ok["customer_id"])
        cust = g.customer(o_ok["customer_id"])
        gc = next(m for m in g.methods(cust["id"]) if m["kind"] == "gift_card")
        item = [i for i in g.items(o_ok["id"]) if i["status"] == "active"][0]
        item_old = [i for i in g.items(old[0]["id"]) if i["status"] == "active"][0]
        day = g.delivered_on(old[0]["id"])
        tasks.append(dict(
            instruction=f"Hi, it's {cust['email']}. I want to return the {label(item)} from order {o_ok['order_number']} and the "
                        f"{label(item_old)} from order {old[0]['order_number']}, both refunded to my gift card {gc['gift_card_code']}.",
            solution=[call("find_customer_by_email", email=cust["email"]),
                      call("get_order_details", order_number=o_ok["order_number"]),
                      call("get_order_details", order_number=old[0]["order_number"]),
                      call("get_gift_card_balance", code=gc["gift_card_code"]),
                      call("return_delivered_order_items", order_number=o_ok["order_number"], item_ids=[item["id"]], refund_method_id=gc["id"]),
                      refusal(day, f"I returned the item from {o_ok['order_number']} to your gift card, but I cannot return the "
                              f"item from {old[0]['order_number']}: it was delivered on {day}, more than {RETURN_WINDOW_DAYS} "
                              "days ago.", outcome="partial")],
            checks=[sql("SELECT id, status FROM order_items WHERE id IN (?, ?) ORDER BY id", [item["id"], item_old["id"]],
                        sorted([[item["id"], "returned"], [item_old["id"], "active"]])),
                    balance_check(g, gc["id"], item["unit_price"]),
                    refused([[day], [str(g.delivered_days(old[0]["id"]))]], ["returned", "refunded"],
                            about=[old[0]["order_number"]], allowed=[RETURN_WINDOW_DAYS]),
                    footprint(RETURN_TABLES)],
            tags=["trap", "mixed", "return", "gift-card"]))
        break
    return tasks


def hard_tier(g: Golden) -> list[dict[str, Any]]:
    """Tasks whose reference needs at least eight dependent calls: find the customer, list their delivered
    orders, read every one (the delivery date decides whether it can still be returned), return what the
    window allows, and report the total refunded. The customer's older orders are the distractors."""
    tasks = []
    wording = [
        lambda c, _gc: (f"Hi, I'm {c['email']}. I'd like to send back every item I still have from my delivered orders, "
                        "as far as the return policy allows, each refunded the way I paid for that order. How much will I "
                        "get back in total?"),
        lambda c, _gc: (f"{c['first_name']} {c['last_name']} here, zip {c['zip']}. Please return all the items from my "
                        "delivered orders that can still be returned, with every refund going to the payment method of "
                        "its order, and tell me the total amount refunded."),
        lambda c, gc: (f"Hello, this is {c['email']}. Whatever I can still return from my delivered orders, please return "
                       f"all of it and put the refunds on my gift card {gc}. What is the total that goes onto the card?"),
    ]
    candidates = g.all("SELECT customer_id FROM orders WHERE status = 'delivered' GROUP BY 1 HAVING COUNT(*) BETWEEN 3 AND 7 "
                       "ORDER BY customer_id")
    for row in candidates:
        if len(tasks) == len(wording):
            break
        cid = row["customer_id"]
        k = len(tasks)
        gift = [m for m in g.methods(cid) if m["kind"] == "gift_card"]
        if cid in g.used_customers or (k == 2 and not gift):
            continue
        delivered = g.all("SELECT * FROM orders WHERE customer_id = ? AND status = 'delivered' ORDER BY placed_at DESC, id", cid)
        if any(o["id"] in g.used_orders for o in delivered):
            continue
        days = {o["id"]: g.delivered_days(o["id"]) for o in delivered}
        if any(d is None or RETURN_WINDOW_DAYS - 2 <= d <= RETURN_WINDOW_DAYS + 2 for d in days.values()):
            continue   # no order on the edge of the window: the policy, not a day's rounding, decides
        items = {o["id"]: g.items(o["id"]) for o in delivered}
        inside = [o for o in delivered if days[o["id"]] < RETURN_WINDOW_DAYS and any(i["status"] == "active" for i in items[o["id"]])]
        outside = [o for o in delivered if days[o["id"]] > RETURN_WINDOW_DAYS and any(i["status"] == "active" for i in items[o["id"]])]
        if not inside or not outside or any(i["status"] == "replacement" for o in inside for i in items[o["id"]]):
            continue
        calls = 2 + len(delivered) + len(inside) + (1 if k == 2 else 0)
        if calls < 8:
            continue
        g.used_customers.add(cid)
        g.used_orders |= {o["id"] for o in delivered}
        cust = g.customer(cid)
        find = (call("find_customer_by_name_and_zip", first_name=cust["first_name"], last_name=cust["last_name"], zip=cust["zip"])
                if k == 1 else call("find_customer_by_email", email=cust["email"]))
        steps = [find, call("search_orders", customer_id=cid, status="delivered")]
        steps += [call("get_order_details", order_number=o["order_number"]) for o in delivered]
        if k == 2:
            steps.append(call("list_payment_methods", customer_id=cid, kind="gift_card"))
        checks, total, deltas = [], 0.0, {}
        for o in inside:
            active = [i for i in items[o["id"]] if i["status"] == "active"]
            method = gift[0]["id"] if k == 2 else o["payment_method_id"]
            steps.append(call("return_delivered_order_items", order_number=o["order_number"], item_ids=[i["id"] for i in active],
                              refund_method_id=method))
            amount = money(sum(i["unit_price"] for i in active))
            total = money(total + amount)
            checks.append(new_txns_check(g, o["id"], [[method, "refund", amount]]))
            for i in active:
                deltas[i["variant_id"]] = deltas.get(i["variant_id"], 0) + 1
        ids = [i["id"] for o in delivered for i in items[o["id"]]]
        inside_ids = {o["id"] for o in inside}
        expect = sorted([i["id"], "returned" if o["id"] in inside_ids and i["status"] == "active" else i["status"]]
                        for o in delivered for i in items[o["id"]])
        checks += [sql(f"SELECT id, status FROM order_items WHERE id IN ({', '.join('?' * len(ids))}) ORDER BY id", ids, expect,
                       "every returnable item returned, the rest untouched"),
                   stock_check(g, deltas)]
        if k == 2:
            checks.append(balance_check(g, gift[0]["id"], total))
        tasks.append(dict(
            instruction=wording[k](cust, gift[0]["gift_card_code"] if gift else ""),
            solution=[*steps, submit(fmt(total))],
            checks=[*checks, answer("numeric", fmt(total)), footprint(RETURN_TABLES)],
            tags=["write", "return", "multi-step", "hard"]))
    assert len(tasks) == len(wording), "not enough customers for the hard tier"
    return tasks


def build_tasks(spec: dict[str, Any]) -> list[dict[str, Any]]:
    state_spec = {k: v for k, v in spec.items() if k != "tasks"}
    conn = state.episode_connection(state.golden_bytes(state_spec))
    try:
        g = Golden(conn, spec["now"][:10])
        families = lookups(g) + simple_writes(g) + workflows(g) + traps(g) + hard_tier(g)
    finally:
        conn.close()
    tasks = [{"id": f"retail-{n:03d}", "instruction": t["instruction"], "kind": "handcrafted", "difficulty": 0.0,
              "knobs": {"hidden": 1 if {"trap", "hard"} & set(t["tags"]) else 0,   # a blocking fact the request leaves out
                        "tier": "hard" if "hard" in t["tags"] else "standard"},
              "tags": t["tags"], "solution": t["solution"], "checks": t["checks"]} for n, t in enumerate(families, 1)]
    return rate_tasks(state_spec, tasks)


def rate_tasks(spec: dict[str, Any], tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each task's difficulty from the factors its reference measures (the synthesised tasks' formula)."""
    from agentworld_envs.tasks.factors import difficulty, measure
    from agentworld_envs.tasks.runner import Runner

    runner = Runner(spec, state.golden_bytes(spec))
    try:
        out = []
        for t in tasks:
            f = measure(runner, t)
            out.append({**t, "difficulty": difficulty(f), "knobs": {**t["knobs"], "factors": f}})
        return out
    finally:
        runner.close()
