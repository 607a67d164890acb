"""Tools of the retail back office: declarative lookups plus Python workflows with the real rules."""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import operator
from typing import Any

from agentworld_envs.engine.tools import ToolContext, ToolError, python_tool

from .schema import CANCEL_REASONS, ORDER_STATUSES, RETURN_WINDOW_DAYS, TICKET_TOPICS

# ---------------------------------------------------------------------------- helpers

ORDER_NUMBER = {"type": "string", "pattern": "^#?[Ww][0-9]{7}$",
                "description": "The order number, e.g. '#W1234567'."}
ID = {"type": "integer", "minimum": 1}


def _id(desc: str) -> dict[str, Any]:
    return {**ID, "description": desc}


def _money(x: float) -> float:
    return round(x + 0.0, 2)


def _norm_number(number: str) -> str:
    number = number.strip().upper()
    return number if number.startswith("#") else "#" + number


def _order(ctx: ToolContext, number: str) -> dict[str, Any]:
    number = _norm_number(number)
    return ctx.require("SELECT * FROM orders WHERE order_number = ?", number, what=f"order {number}")


def _need_status(order: dict[str, Any], allowed: str, action: str) -> None:
    if order["status"] != allowed:
        raise ToolError("precondition_failed",
                        f"order {order['order_number']} is {order['status']}; only {allowed} orders can be {action}")


def _method(ctx: ToolContext, customer_id: int, method_id: int) -> dict[str, Any]:
    pm = ctx.one("SELECT * FROM payment_methods WHERE id = ?", method_id)
    if pm is None:
        raise ToolError("not_found", f"payment method {method_id} not found")
    if pm["customer_id"] != customer_id:
        raise ToolError("precondition_failed", f"payment method {method_id} does not belong to this order's customer")
    return pm


def _charge(ctx: ToolContext, order_id: int, pm: dict[str, Any], amount: float) -> None:
    amount = _money(amount)
    if amount <= 0:
        return
    if pm["kind"] == "gift_card":
        balance = ctx.value("SELECT balance FROM payment_methods WHERE id = ?", pm["id"])
        if balance < amount:
            raise ToolError("precondition_failed",
                            f"gift card {pm['gift_card_code']} balance {balance:.2f} does not cover {amount:.2f}")
        ctx.execute("UPDATE payment_methods SET balance = ROUND(balance - ?, 2) WHERE id = ?", amount, pm["id"])
    ctx.insert("payment_transactions", order_id=order_id, payment_method_id=pm["id"], kind="charge",
               amount=amount, created_at=ctx.now)


def _refund(ctx: ToolContext, order_id: int, pm: dict[str, Any], amount: float) -> None:
    amount = _money(amount)
    if amount <= 0:
        return
    if pm["kind"] == "gift_card":
        ctx.execute("UPDATE payment_methods SET balance = ROUND(balance + ?, 2) WHERE id = ?", amount, pm["id"])
    ctx.insert("payment_transactions", order_id=order_id, payment_method_id=pm["id"], kind="refund",
               amount=amount, created_at=ctx.now)


def _settle(ctx: ToolContext, order_id: int, pm: dict[str, Any], diff: float) -> dict[str, Any]:
    diff = _money(diff)
    if diff > 0:
        _charge(ctx, order_id, pm, diff)
        return {"charged": diff, "payment_method_id": pm["id"]}
    if diff < 0:
        _refund(ctx, order_id, pm, -diff)
        return {"refunded": -diff, "payment_method_id": pm["id"]}
    return {"price_difference": 0.0}


def _items(ctx: ToolContext, order: dict[str, Any], item_ids: list[int]) -> list[dict[str, Any]]:
    if len(set(item_ids)) != len(item_ids):
        raise ToolError("invalid_arguments", "item_ids contains duplicates")
    out = []
    for iid in item_ids:
        item = ctx.one("SELECT * FROM order_items WHERE id = ? AND order_id = ?", iid, order["id"])
        if item is None:
            raise ToolError("not_found", f"item {iid} is not part of order {order['order_number']}")
        if item["status"] != "active":
            raise ToolError("precondition_failed", f"item {iid} is already {item['status']}")
        out.append(item)
    return out


def _swap_target(ctx: ToolContext, old_variant_id: int, new_variant_id: int) -> dict[str, Any]:
    old = ctx.one("SELECT * FROM variants WHERE id = ?", old_variant_id)
    new = ctx.one("SELECT * FROM variants WHERE id = ?", new_variant_id)
    if new is None:
        raise ToolError("not_found", f"variant {new_variant_id} not found")
    if new["product_id"] != old["product_id"]:
        raise ToolError("precondition_failed", f"variant {new['sku']} is not a variant of the same product")
    if new["id"] == old["id"]:
        raise ToolError("precondition_failed", f"variant {new['sku']} is the variant the item already has")
    return new


def _take_stock(ctx: ToolContext, variant: dict[str, Any]) -> None:
    row = ctx.one("SELECT stock, status, sku FROM variants WHERE id = ?", variant["id"])
    if row["status"] != "active":
        raise ToolError("precondition_failed", f"variant {row['sku']} is discontinued")
    if row["stock"] < 1:
        raise ToolError("precondition_failed", f"variant {row['sku']} is out of stock")
    ctx.execute("UPDATE variants SET stock = stock - 1 WHERE id = ?", variant["id"])


def _put_back(ctx: ToolContext, variant_id: int) -> None:
    ctx.execute("UPDATE variants SET stock = stock + 1 WHERE id = ?", variant_id)


def _pair(item_ids: list[int], new_variant_ids: list[int]) -> None:
    if len(item_ids) != len(new_variant_ids):
        raise ToolError("invalid_arguments", "item_ids and new_variant_ids must have the same length")


def _within_window(ctx: ToolContext, order: dict[str, Any]) -> None:
    delivered = ctx.value("SELECT MAX(delivered_on) FROM fulfilments WHERE order_id = ?", order["id"])
    if delivered is None:
        raise ToolError("precondition_failed", f"order {order['order_number']} has no delivery on record")
    age = dt.date.fromisoformat(ctx.today) - dt.date.fromisoformat(delivered)
    if age > dt.timedelta(days=RETURN_WINDOW_DAYS):
        raise ToolError("precondition_failed",
                        f"order {order['order_number']} was delivered on {delivered[:10]}, more than "
                        f"{RETURN_WINDOW_DAYS} days ago; the return window has closed")


def _order_view(ctx: ToolContext, order: dict[str, Any]) -> dict[str, Any]:
    view = dict(order)
    view["ship_to"] = ctx.one("SELECT line1, line2, city, state, zip FROM addresses WHERE id = ?", order["ship_address_id"])
    view["items"] = ctx.all(
        "SELECT i.id AS item_id, i.variant_id, v.sku, p.id AS product_id, p.name AS product, v.options, "
        "i.unit_price, i.status, r.item_id AS replaces_item_id FROM order_items i LEFT JOIN return_items r "
        "ON r.replacement_item_id = i.id JOIN variants v ON v.id = i.variant_id "
        "JOIN products p ON p.id = v.product_id WHERE i.order_id = ? ORDER BY i.id", order["id"])
    view["total"] = _money(sum(i["unit_price"] for i in view["items"] if i["status"] in ("active", "replacement")))
    view["fulfilments"] = ctx.all("SELECT carrier, tracking_number, CASE WHEN delivered_on IS NULL THEN 'in_transit' ELSE 'delivered' END AS status, "
                                  "shipped_on, delivered_on FROM fulfilments "
                                  "WHERE order_id = ? ORDER BY id", order["id"])
    view["payments"] = ctx.all("SELECT payment_method_id, kind, amount, created_at FROM payment_transactions "
                               "WHERE order_id = ? ORDER BY id", order["id"])
    view["returns"] = ctx.all("SELECT rma, kind, status, amount, refund_method_id, created_at FROM returns "
                              "WHERE order_id = ? ORDER BY id", order["id"])
    return view


# ---------------------------------------------------------------------------- Python tools


def _address(ctx: ToolContext, customer_id: int, line1: str, city: str, state: str, zip: str,
             line2: str | None = None) -> int:
    """Id of this address in the customer's address book (added if new)."""
    clean = [s.strip() for s in (line1, city, state, zip)]
    line2 = line2.strip() if line2 and line2.strip() else None
    found = ctx.value("SELECT id FROM addresses WHERE customer_id = ? AND line1 = ? AND line2 IS ? AND city = ? "
                      "AND state = ? AND zip = ?", customer_id, clean[0], line2, *clean[1:])
    if found:
        return found
    return ctx.insert("addresses", customer_id=customer_id, line1=clean[0], line2=line2, city=clean[1],
                      state=clean[2], zip=clean[3], is_default=0)


@python_tool("retail.find_customer_by_name_and_zip")
def find_customer_by_name_and_zip(ctx: ToolContext, first_name: str, last_name: str, zip: str) -> Any:
    rows = ctx.all("SELECT c.id AS customer_id, c.first_name, c.last_name, c.email FROM customers c JOIN addresses a "
                   "ON a.customer_id = c.id AND a.is_default = 1 WHERE "
                   "c.first_name = ? COLLATE NOCASE AND c.last_name = ? COLLATE NOCASE AND a.zip = ?",
                   first_name.strip(), last_name.strip(), zip.strip())
    if not rows:
        raise ToolError("not_found", "no customer with that name and zip code")
    return rows[0] if len(rows) == 1 else {"matches": rows}


@python_tool("retail.get_order_details")
def get_order_details(ctx: ToolContext, order_number: str) -> Any:
    return _order_view(ctx, _order(ctx, order_number))


@python_tool("retail.cancel_pending_order")
def cancel_pending_order(ctx: ToolContext, order_number: str, reason: str) -> Any:
    order = _order(ctx, order_number)
    _need_status(order, "pending", "cancelled")
    for item in ctx.all("SELECT variant_id FROM order_items WHERE order_id = ? AND status IN ('active', 'replacement')",
                        order["id"]):
        _put_back(ctx, item["variant_id"])
    nets = ctx.all("SELECT payment_method_id AS pm, ROUND(SUM(CASE kind WHEN 'charge' THEN amount ELSE -amount END), 2) AS net "
                   "FROM payment_transactions WHERE order_id = ? GROUP BY payment_method_id ORDER BY payment_method_id",
                   order["id"])
    for row in nets:
        _refund(ctx, order["id"], ctx.one("SELECT * FROM payment_methods WHERE id = ?", row["pm"]), row["net"])
    ctx.update("orders", {"id": order["id"]}, status="cancelled", cancel_reason=reason, cancelled_at=ctx.now)
    return _order_view(ctx, _order(ctx, order_number))


@python_tool("retail.modify_pending_order_items")
def modify_pending_order_items(ctx: ToolContext, order_number: str, item_ids: list[int], new_variant_ids: list[int],
                               payment_method_id: int) -> Any:
    order = _order(ctx, order_number)
    _need_status(order, "pending", "modified")
    _pair(item_ids, new_variant_ids)
    pm = _method(ctx, order["customer_id"], payment_method_id)
    diff = 0.0
    for item, new_vid in zip(_items(ctx, order, item_ids), new_variant_ids):
        new = _swap_target(ctx, item["variant_id"], new_vid)
        _put_back(ctx, item["variant_id"])
        _take_stock(ctx, new)
        ctx.update("order_items", {"id": item["id"]}, variant_id=new["id"], unit_price=new["price"])
        diff += new["price"] - item["unit_price"]
    settlement = _settle(ctx, order["id"], pm, diff)
    return {**_order_view(ctx, _order(ctx, order_number)), "settlement": settlement}


@python_tool("retail.modify_pending_order_address")
def modify_pending_order_address(ctx: ToolContext, order_number: str, address1: str, city: str, state: str, zip: str,
                                 address2: str | None = None) -> Any:
    order = _order(ctx, order_number)
    _need_status(order, "pending", "modified")
    aid = _address(ctx, order["customer_id"], address1, city, state, zip, address2)
    if aid == order["ship_address_id"]:
        raise ToolError("precondition_failed", "the order already ships to this address")
    ctx.update("orders", {"id": order["id"]}, ship_address_id=aid)
    return _order_view(ctx, _order(ctx, order_number))


@python_tool("retail.update_default_address")
def update_default_address(ctx: ToolContext, customer_id: int, address1: str, city: str, state: str, zip: str,
                           address2: str | None = None) -> Any:
    ctx.require("SELECT id FROM customers WHERE id = ?", customer_id, what=f"customer {customer_id}")
    aid = _address(ctx, customer_id, address1, city, state, zip, address2)
    ctx.execute("UPDATE addresses SET is_default = 0 WHERE customer_id = ? AND is_default = 1 AND id != ?", customer_id, aid)
    ctx.execute("UPDATE addresses SET is_default = 1 WHERE id = ? AND is_default = 0", aid)
    return {"default_address": ctx.one("SELECT * FROM addresses WHERE id = ?", aid)}


@python_tool("retail.modify_pending_order_payment")
def modify_pending_order_payment(ctx: ToolContext, order_number: str, payment_method_id: int) -> Any:
    order = _order(ctx, order_number)
    _need_status(order, "pending", "modified")
    pm = _method(ctx, order["customer_id"], payment_method_id)
    if pm["id"] == order["payment_method_id"]:
        raise ToolError("precondition_failed", "the order is already paid with this payment method")
    nets = ctx.all("SELECT payment_method_id AS pm, ROUND(SUM(CASE kind WHEN 'charge' THEN amount ELSE -amount END), 2) AS net "
                   "FROM payment_transactions WHERE order_id = ? GROUP BY payment_method_id ORDER BY payment_method_id",
                   order["id"])
    total = 0.0
    for row in nets:
        _refund(ctx, order["id"], ctx.one("SELECT * FROM payment_methods WHERE id = ?", row["pm"]), row["net"])
        total += row["net"]
    _charge(ctx, order["id"], pm, total)
    ctx.update("orders", {"id": order["id"]}, payment_method_id=pm["id"])
    return _order_view(ctx, _order(ctx, order_number))


@python_tool("retail.return_delivered_order_items")
def return_delivered_order_items(ctx: ToolContext, order_number: str, item_ids: list[int], refund_method_id: int) -> Any:
    order = _order(ctx, order_number)
    _need_status(order, "delivered", "returned")
    _within_window(ctx, order)
    pm = _method(ctx, order["customer_id"], refund_method_id)
    if pm["id"] != order["payment_method_id"] and pm["kind"] != "gift_card":
        raise ToolError("precondition_failed", "refunds go to the original payment method or to a gift card of the customer")
    items = _items(ctx, order, item_ids)
    n = ctx.value("SELECT COUNT(*) FROM returns WHERE order_id = ?", order["id"]) + 1
    amount = _money(sum(i["unit_price"] for i in items))
    rid = ctx.insert("returns", rma=f"RMA-{order['order_number'][2:]}-{n}", order_id=order["id"], kind="return",
                     status="requested", refund_method_id=pm["id"], amount=amount, created_at=ctx.now)
    for item in items:
        ctx.update("order_items", {"id": item["id"]}, status="returned")
        ctx.insert("return_items", return_id=rid, item_id=item["id"])
        _put_back(ctx, item["variant_id"])
    _refund(ctx, order["id"], pm, amount)
    return {"return": ctx.one("SELECT * FROM returns WHERE id = ?", rid), "refunded": amount,
            "refund_method_id": pm["id"]}


@python_tool("retail.exchange_delivered_order_items")
def exchange_delivered_order_items(ctx: ToolContext, order_number: str, item_ids: list[int], new_variant_ids: list[int],
                                   payment_method_id: int) -> Any:
    order = _order(ctx, order_number)
    _need_status(order, "delivered", "exchanged")
    _within_window(ctx, order)
    _pair(item_ids, new_variant_ids)
    pm = _method(ctx, order["customer_id"], payment_method_id)
    items = _items(ctx, order, item_ids)
    n = ctx.value("SELECT COUNT(*) FROM returns WHERE order_id = ?", order["id"]) + 1
    rid = ctx.insert("returns", rma=f"RMA-{order['order_number'][2:]}-{n}", order_id=order["id"], kind="exchange",
                     status="requested", refund_method_id=None, amount=_money(sum(i["unit_price"] for i in items)),
                     created_at=ctx.now)
    diff = 0.0
    for item, new_vid in zip(items, new_variant_ids):
        new = _swap_target(ctx, item["variant_id"], new_vid)
        ctx.update("order_items", {"id": item["id"]}, status="exchanged")
        _put_back(ctx, item["variant_id"])
        _take_stock(ctx, new)
        new_item = ctx.insert("order_items", order_id=order["id"], variant_id=new["id"], unit_price=new["price"],
                              status="replacement")
        ctx.insert("return_items", return_id=rid, item_id=item["id"], replacement_item_id=new_item)
        diff += new["price"] - item["unit_price"]
    settlement = _settle(ctx, order["id"], pm, diff)
    return {"exchange": ctx.one("SELECT * FROM returns WHERE id = ?", rid), "settlement": settlement}


@python_tool("retail.place_order")
def place_order(ctx: ToolContext, customer_id: int, variant_ids: list[int], payment_method_id: int) -> Any:
    cust = ctx.require("SELECT * FROM customers WHERE id = ?", customer_id, what=f"customer {customer_id}")
    pm = _method(ctx, customer_id, payment_method_id)
    seq = ctx.value("SELECT COUNT(*) FROM orders") + 1
    digest = int(hashlib.sha256(f"{customer_id}:{seq}".encode()).hexdigest(), 16)
    number = f"#W{1000000 + digest % 9000000}"
    while ctx.value("SELECT 1 FROM orders WHERE order_number = ?", number):
        number = f"#W{1000000 + (int(number[2:]) + 7919 - 1000000) % 9000000}"
    ship = ctx.require("SELECT id FROM addresses WHERE customer_id = ? AND is_default = 1", cust["id"],
                       what="default address")
    oid = ctx.insert("orders", order_number=number, customer_id=customer_id, status="pending", placed_at=ctx.now,
                     payment_method_id=pm["id"], ship_address_id=ship["id"])
    total = 0.0
    for vid in variant_ids:
        variant = ctx.require("SELECT * FROM variants WHERE id = ?", vid, what=f"variant {vid}")
        _take_stock(ctx, variant)
        ctx.insert("order_items", order_id=oid, variant_id=vid, unit_price=variant["price"], status="active")
        total += variant["price"]
    _charge(ctx, oid, pm, total)
    return _order_view(ctx, _order(ctx, number))


@python_tool("retail.issue_gift_card")
def issue_gift_card(ctx: ToolContext, customer_id: int) -> Any:
    ctx.require("SELECT id FROM customers WHERE id = ?", customer_id, what=f"customer {customer_id}")
    seq = ctx.value("SELECT COUNT(*) FROM payment_methods") + 1
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    digest = hashlib.sha256(f"gc:{customer_id}:{seq}".encode()).digest()
    code = "GC-" + "".join(alphabet[b % 32] for b in digest[:4]) + "-" + "".join(alphabet[b % 32] for b in digest[4:8])
    mid = ctx.insert("payment_methods", customer_id=customer_id, kind="gift_card", gift_card_code=code, balance=0.0)
    return {"created": ctx.one("SELECT * FROM payment_methods WHERE id = ?", mid)}


_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        return _BIN[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return -_eval(node.operand) if isinstance(node.op, ast.USub) else _eval(node.operand)
    raise ToolError("invalid_arguments", "only numbers, + - * / and parentheses are allowed")


@python_tool("retail.calculate")
def calculate(ctx: ToolContext, expression: str) -> Any:
    if len(expression) > 200:
        raise ToolError("invalid_arguments", "expression is too long")
    try:
        value = _eval(ast.parse(expression, mode="eval"))
    except (SyntaxError, ZeroDivisionError, RecursionError) as exc:
        raise ToolError("invalid_arguments", f"cannot evaluate: {exc}") from None
    return {"result": round(value, 2)}


# ---------------------------------------------------------------------------- tool specs


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or [], "additionalProperties": False}


def _py(name: str, description: str, props: dict[str, Any], required: list[str], read: bool = False) -> dict[str, Any]:
    tool = {"name": name, "description": description, "parameters": _obj(props, required),
            "impl": {"kind": "python", "function": f"retail.{name}"}}
    if read:
        tool["tags"] = ["read"]
    return tool


ADDR = {"address1": {"type": "string", "minLength": 1, "description": "Street address."},
        "address2": {"type": ["string", "null"], "description": "Apartment / suite, if any."},
        "city": {"type": "string", "minLength": 1}, "state": {"type": "string", "pattern": "^[A-Z]{2}$", "description": "2-letter state code."},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$", "description": "5-digit zip code."}}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 50, "description": "Maximum rows to return (default 20)."}
OFFSET = {"type": "integer", "minimum": 0, "description": "Rows to skip, for paging."}
ITEM_IDS = {"type": "array", "items": ID, "minItems": 1, "maxItems": 10,
            "description": "item_id values of the order's items (see get_order_details)."}
NEW_VARIANTS = {"type": "array", "items": ID, "minItems": 1, "maxItems": 10,
                "description": "For each item, in the same order, the variant_id to swap it to (same product)."}
TS = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}", "description": "ISO date or timestamp, e.g. '2026-03-01'."}

TOOLS: list[dict[str, Any]] = [
    # ---- customers
    {"name": "find_customer_by_email", "description": "Find a customer account by email address. Returns the customer id and name.",
     "parameters": _obj({"email": {"type": "string", "minLength": 3, "description": "Customer email address."}}, ["email"]),
     "impl": {"kind": "search", "table": "customers", "columns": ["id", "first_name", "last_name", "email"],
              "filters": [{"param": "email", "column": "email", "op": "eq"}], "limit": {"default": 5, "max": 5}}},
    _py("find_customer_by_name_and_zip", "Find a customer by first name, last name and the zip code of their default address. Returns the customer id and name.",
        {"first_name": {"type": "string", "minLength": 1}, "last_name": {"type": "string", "minLength": 1},
         "zip": {"type": "string", "pattern": "^[0-9]{5}$", "description": "5-digit zip code."}},
        ["first_name", "last_name", "zip"], read=True),
    {"name": "get_customer_details", "description": "Full customer profile: contact details, address book (is_default marks the default address), saved payment methods (with gift card balances) and orders. Returns the whole profile as one record.",
     "parameters": _obj({"customer_id": _id("Customer id.")}, ["customer_id"]),
     "impl": {"kind": "get", "table": "customers", "key": {"param": "customer_id", "column": "id"},
              "include": [{"table": "addresses", "column": "customer_id", "as": "addresses"},
                          {"table": "payment_methods", "column": "customer_id", "as": "payment_methods"},
                          {"table": "orders", "column": "customer_id", "as": "orders"}]}},
    {"name": "search_customers", "description": "Search customers by (partial) last name and/or first name. Returns up to `limit` matching customers (id, name, email) and the total count.",
     "parameters": _obj({"last_name": {"type": "string"}, "first_name": {"type": "string"}, "limit": LIMIT, "offset": OFFSET}),
     "impl": {"kind": "search", "table": "customers", "columns": ["id", "first_name", "last_name", "email"],
              "filters": [{"param": "last_name", "column": "last_name", "op": "like"},
                          {"param": "first_name", "column": "first_name", "op": "like"}],
              "limit": {"param": "limit", "default": 20, "max": 50}, "offset_param": "offset"}},
    _py("update_default_address", "Set a customer's default shipping address (added to the address book if new). Existing orders are not changed. Returns the updated customer with the new default address.",
        {"customer_id": _id("Customer id."), **ADDR}, ["customer_id", "address1", "city", "state", "zip"]),
    {"name": "update_customer_contact", "description": "Change a customer's email and/or phone number. Returns the updated customer.",
     "parameters": _obj({"customer_id": _id("Customer id."), "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$"},
                         "phone": {"type": "string", "minLength": 7}}, ["customer_id"]),
     "impl": {"kind": "update", "table": "customers", "key": {"param": "customer_id", "column": "id"},
              "set": {"email": "$param:email", "phone": "$param:phone"}}},
    # ---- payment methods
    {"name": "list_payment_methods", "description": "List a customer's saved payment methods (credit cards, PayPal, gift cards with balances). Returns every saved method with its id, kind and (for gift cards) balance.",
     "parameters": _obj({"customer_id": _id("Customer id."), "kind": {"type": "string", "enum": ["credit_card", "paypal", "gift_card"]}},
                        ["customer_id"]),
     "impl": {"kind": "list", "table": "payment_methods",
              "filters": [{"param": "customer_id", "column": "customer_id"}, {"param": "kind", "column": "kind"}],
              "limit": {"default": 20, "max": 20}}},
    {"name": "get_gift_card_balance", "description": "Current balance of a gift card, by its code (e.g. 'GC-ABCD-EFGH'). Returns the card's code and balance.",
     "parameters": _obj({"code": {"type": "string", "pattern": "^GC-[A-Z0-9]{4}-[A-Z0-9]{4}$"}}, ["code"]),
     "impl": {"kind": "get", "table": "payment_methods", "key": {"param": "code", "column": "gift_card_code"},
              "columns": ["id", "gift_card_code", "balance", "customer_id"]}},
    _py("issue_gift_card", "Issue a new, empty gift card to a customer (e.g. to receive a refund as store credit). Returns its id and code.",
        {"customer_id": _id("Customer id.")}, ["customer_id"]),
    {"name": "remove_payment_method", "description": "Delete a saved payment method. Not allowed for methods used on any order. Returns the removed method.",
     "parameters": _obj({"payment_method_id": _id("Payment method id.")}, ["payment_method_id"]),
     "impl": {"kind": "delete", "table": "payment_methods", "key": {"param": "payment_method_id", "column": "id"},
              "preconditions": [{"expr": "NOT EXISTS (SELECT 1 FROM payment_transactions t WHERE t.payment_method_id = :__key) "
                                         "AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.payment_method_id = :__key)",
                                 "message": "this payment method was used on orders and cannot be removed"}]}},
    # ---- catalogue
    {"name": "list_categories", "description": "List catalogue categories; give parent_id to list subcategories. Returns the categories with their ids and parent ids.",
     "parameters": _obj({"parent_id": _id("Parent category id.")}),
     "impl": {"kind": "list", "table": "categories", "filters": [{"param": "parent_id", "column": "parent_id"}],
              "limit": {"default": 50, "max": 50}}},
    {"name": "search_products", "description": "Search products by (partial) name, brand or category id. Returns up to `limit` matching products (id, name, brand, category) and the total count.",
     "parameters": _obj({"name": {"type": "string"}, "brand": {"type": "string"}, "category_id": _id("Category id."),
                         "limit": LIMIT, "offset": OFFSET}),
     "impl": {"kind": "search", "table": "products",
              "filters": [{"param": "name", "column": "name", "op": "like"}, {"param": "brand", "column": "brand"},
                          {"param": "category_id", "column": "category_id"}],
              "limit": {"param": "limit", "default": 20, "max": 50}, "offset_param": "offset"}},
    {"name": "get_product_details", "description": "A product with all its variants (variant id, SKU, options, price, stock, status). Returns the product and its variants.",
     "parameters": _obj({"product_id": _id("Product id.")}, ["product_id"]),
     "impl": {"kind": "get", "table": "products", "key": {"param": "product_id", "column": "id"},
              "include": [{"table": "variants", "column": "product_id", "as": "variants"}]}},
    {"name": "search_variants", "description": "Search variants by product, option text (e.g. 'size: M'), minimum stock, maximum price or status. Returns up to `limit` matching variants and the total count.",
     "parameters": _obj({"product_id": _id("Product id."), "options": {"type": "string", "description": "Substring of the options text."},
                         "min_stock": {"type": "integer", "minimum": 0}, "max_price": {"type": "number", "minimum": 0},
                         "status": {"type": "string", "enum": ["active", "discontinued"]}, "limit": LIMIT, "offset": OFFSET}),
     "impl": {"kind": "search", "table": "variants",
              "filters": [{"param": "product_id", "column": "product_id"}, {"param": "options", "column": "options", "op": "like"},
                          {"param": "min_stock", "column": "stock", "op": "gte"},
                          {"param": "max_price", "column": "price", "op": "lte"}, {"param": "status", "column": "status"}],
              "limit": {"param": "limit", "default": 20, "max": 50}, "offset_param": "offset"}},
    {"name": "get_variant_by_sku", "description": "Look up one variant by SKU. Returns the variant with its product id, options, price, stock and status.",
     "parameters": _obj({"sku": {"type": "string", "minLength": 1}}, ["sku"]),
     "impl": {"kind": "get", "table": "variants", "key": {"param": "sku", "column": "sku"}}},
    {"name": "get_product_stock_total", "description": "Total units in stock across a product's variants (optionally only active ones). Returns the total as value.",
     "parameters": _obj({"product_id": _id("Product id."), "status": {"type": "string", "enum": ["active", "discontinued"]}}, ["product_id"]),
     "impl": {"kind": "aggregate", "table": "variants", "func": "sum", "column": "stock",
              "filters": [{"param": "product_id", "column": "product_id"}, {"param": "status", "column": "status"}]}},
    {"name": "set_variant_stock", "description": "Set the on-hand stock count of a variant after a stock take or delivery from a supplier. Returns the updated variant.",
     "parameters": _obj({"sku": {"type": "string", "minLength": 1}, "stock": {"type": "integer", "minimum": 0}}, ["sku", "stock"]),
     "impl": {"kind": "update", "table": "variants", "key": {"param": "sku", "column": "sku"}, "set": {"stock": "$param:stock"}}},
    {"name": "discontinue_variant", "description": "Mark an active variant as discontinued (it can no longer be ordered or swapped to). Returns the updated variant.",
     "parameters": _obj({"sku": {"type": "string", "minLength": 1}}, ["sku"]),
     "impl": {"kind": "transition", "table": "variants", "key": {"param": "sku", "column": "sku"}, "column": "status",
              "from": ["active"], "to": "discontinued"}},
    # ---- orders
    _py("get_order_details", "An order with its status, shipping address, items (item_id, variant, price, status), shipments, payments and returns.",
        {"order_number": ORDER_NUMBER}, ["order_number"], read=True),
    {"name": "search_orders", "description": "List orders, newest first, filtered by customer, status and placement date range. Returns up to `limit` orders (order number, status, dates, total) and the total count.",
     "parameters": _obj({"customer_id": _id("Customer id."), "status": {"type": "string", "enum": ORDER_STATUSES},
                         "placed_after": TS, "placed_before": TS, "limit": LIMIT, "offset": OFFSET}),
     "impl": {"kind": "search", "table": "orders", "columns": ["id", "order_number", "customer_id", "status", "placed_at", "payment_method_id"],
              "filters": [{"param": "customer_id", "column": "customer_id"}, {"param": "status", "column": "status"},
                          {"param": "placed_after", "column": "placed_at", "op": "gte"},
                          {"param": "placed_before", "column": "placed_at", "op": "lte"}],
              "order_by": [["placed_at", "desc"]], "limit": {"param": "limit", "default": 20, "max": 50}, "offset_param": "offset"}},
    {"name": "count_orders_by_status", "description": "Number of orders per status, optionally for one customer or since a date. Returns one group per status with its count.",
     "parameters": _obj({"customer_id": _id("Customer id."), "placed_after": TS}),
     "impl": {"kind": "aggregate", "table": "orders", "func": "count", "group_by": "status",
              "filters": [{"param": "customer_id", "column": "customer_id"}, {"param": "placed_after", "column": "placed_at", "op": "gte"}]}},
    _py("place_order", "Place a new order for a customer: one unit per variant id listed, shipped to the customer's default address and charged to the given payment method. Returns the new order with its order number and total.",
        {"customer_id": _id("Customer id."), "variant_ids": {"type": "array", "items": ID, "minItems": 1, "maxItems": 10},
         "payment_method_id": _id("Payment method of the customer.")}, ["customer_id", "variant_ids", "payment_method_id"]),
    _py("cancel_pending_order", "Cancel a pending order: refunds the paid amount to the original payment method(s) and returns the items to stock.",
        {"order_number": ORDER_NUMBER, "reason": {"type": "string", "enum": CANCEL_REASONS, "description": "Why the customer cancels."}},
        ["order_number", "reason"]),
    _py("modify_pending_order_items", "Swap items of a pending order to other variants of the same product; the price difference is charged or refunded to the given payment method. Returns the updated order and the amount charged or refunded.",
        {"order_number": ORDER_NUMBER, "item_ids": ITEM_IDS, "new_variant_ids": NEW_VARIANTS,
         "payment_method_id": _id("Payment method of the customer that settles the price difference.")},
        ["order_number", "item_ids", "new_variant_ids", "payment_method_id"]),
    _py("modify_pending_order_address", "Change the shipping address of a pending order (the address is added to the customer's address book). Returns the updated order.",
        {"order_number": ORDER_NUMBER, **ADDR}, ["order_number", "address1", "city", "state", "zip"]),
    _py("modify_pending_order_payment", "Pay a pending order with another of the customer's payment methods: the old method is refunded and the new one charged the order total. Returns the updated order and both transactions.",
        {"order_number": ORDER_NUMBER, "payment_method_id": _id("New payment method of the customer.")},
        ["order_number", "payment_method_id"]),
    _py("return_delivered_order_items", "Return items of a delivered order (within the return window); refunds their price to the original payment method or a gift card of the customer, and restocks them.",
        {"order_number": ORDER_NUMBER, "item_ids": ITEM_IDS,
         "refund_method_id": _id("Original payment method of the order, or a gift card of the customer.")},
        ["order_number", "item_ids", "refund_method_id"]),
    _py("exchange_delivered_order_items", "Exchange items of a delivered order (within the return window) for other in-stock variants of the same product; the price difference is settled with the given payment method.",
        {"order_number": ORDER_NUMBER, "item_ids": ITEM_IDS, "new_variant_ids": NEW_VARIANTS,
         "payment_method_id": _id("Payment method of the customer that settles the price difference.")},
        ["order_number", "item_ids", "new_variant_ids", "payment_method_id"]),
    {"name": "track_shipment", "description": "Shipment by carrier tracking number: order id, carrier, ship date and delivery date (null while in transit). Returns the shipment record.",
     "parameters": _obj({"tracking_number": {"type": "string", "minLength": 5}}, ["tracking_number"]),
     "impl": {"kind": "get", "table": "fulfilments", "key": {"param": "tracking_number", "column": "tracking_number"}}},
    {"name": "list_order_transactions", "description": "Charges and refunds of an order (by internal order id), optionally of one kind. Returns the transactions (kind, amount, payment method, time).",
     "parameters": _obj({"order_id": _id("Internal order id (the 'id' field of the order)."),
                         "kind": {"type": "string", "enum": ["charge", "refund"]}}, ["order_id"]),
     "impl": {"kind": "list", "table": "payment_transactions",
              "filters": [{"param": "order_id", "column": "order_id"}, {"param": "kind", "column": "kind"}],
              "limit": {"default": 50, "max": 50}}},
    {"name": "sum_transactions", "description": "Total charged and total refunded (grouped by kind) for an order and/or payment method. Returns one total per kind.",
     "parameters": _obj({"order_id": _id("Internal order id."), "payment_method_id": _id("Payment method id.")}),
     "impl": {"kind": "aggregate", "table": "payment_transactions", "func": "sum", "column": "amount", "group_by": "kind",
              "filters": [{"param": "order_id", "column": "order_id"}, {"param": "payment_method_id", "column": "payment_method_id"}]}},
    {"name": "get_return_details", "description": "A return/exchange (RMA) with its items.",
     "parameters": _obj({"rma": {"type": "string", "minLength": 4}}, ["rma"]),
     "impl": {"kind": "get", "table": "returns", "key": {"param": "rma", "column": "rma"},
              "include": [{"table": "return_items", "column": "return_id", "as": "items"}]}},
    {"name": "add_order_note", "description": "Attach an internal note to an order (by internal order id). Returns the stored note.",
     "parameters": _obj({"order_id": _id("Internal order id."), "body": {"type": "string", "minLength": 1, "maxLength": 500}},
                        ["order_id", "body"]),
     "impl": {"kind": "create", "table": "order_notes",
              "values": {"order_id": "$param:order_id", "body": "$param:body", "created_at": "$now"}}},
    # ---- support
    {"name": "list_support_tickets", "description": "List support tickets of a customer, optionally by status or order. Returns the tickets (id, subject, status, order).",
     "parameters": _obj({"customer_id": _id("Customer id."), "status": {"type": "string", "enum": ["open", "resolved"]},
                         "order_id": _id("Internal order id.")}, ["customer_id"]),
     "impl": {"kind": "list", "table": "support_tickets",
              "filters": [{"param": "customer_id", "column": "customer_id"}, {"param": "status", "column": "status"},
                          {"param": "order_id", "column": "order_id"}], "limit": {"default": 20, "max": 50}}},
    {"name": "open_support_ticket", "description": "Open a support ticket for a customer, optionally about one order. Returns the new ticket with its id.",
     "parameters": _obj({"customer_id": _id("Customer id."), "order_id": _id("Internal order id, if about an order."),
                         "topic": {"type": "string", "enum": TICKET_TOPICS},
                         "summary": {"type": "string", "minLength": 1, "maxLength": 300}},
                        ["customer_id", "topic", "summary"]),
     "impl": {"kind": "create", "table": "support_tickets",
              "values": {"customer_id": "$param:customer_id", "order_id": "$param:order_id", "topic": "$param:topic",
                         "summary": "$param:summary", "status": "open", "created_at": "$now"}}},
    {"name": "resolve_support_ticket", "description": "Close an open support ticket with a short resolution note. Returns the resolved ticket.",
     "parameters": _obj({"ticket_id": _id("Ticket id."), "resolution": {"type": "string", "minLength": 1, "maxLength": 300}},
                        ["ticket_id", "resolution"]),
     "impl": {"kind": "transition", "table": "support_tickets", "key": {"param": "ticket_id", "column": "id"},
              "column": "status", "from": ["open"], "to": "resolved",
              "set": {"resolved_at": "$now", "resolution": "$param:resolution"}}},
    _py("calculate", "Evaluate an arithmetic expression (numbers, + - * / and parentheses), e.g. '49.99 - 34.99'. Returns the result as value, rounded to cents.",
        {"expression": {"type": "string", "minLength": 1, "maxLength": 200}}, ["expression"], read=True),
]
