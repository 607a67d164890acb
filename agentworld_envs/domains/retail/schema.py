"""Tables and policy of the retail back office (the state-defining part of the spec)."""

from __future__ import annotations

from typing import Any

NOW = "2026-03-16T15:00:00Z"
RETURN_WINDOW_DAYS = 30
CANCEL_REASONS = ["no longer needed", "ordered by mistake", "found a better price",
                  "delivery too slow", "changed payment plans"]
ORDER_STATUSES = ["pending", "processing", "shipped", "delivered", "cancelled"]
ITEM_STATUSES = ["active", "returned", "exchanged", "replacement"]
PAYMENT_KINDS = ["credit_card", "paypal", "gift_card"]
CARRIERS = ["UPS", "FedEx", "USPS", "DHL"]
TICKET_TOPICS = ["order status", "return", "exchange", "billing", "product question", "delivery issue", "account"]


def _c(name: str, type_: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **kw}


_MONEY = "ROUND({c}, 2) = {c}"

TABLES: list[dict[str, Any]] = [
    {"name": "categories", "description": "Catalogue categories; leaves hold products.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("name", "TEXT", nullable=False, unique=True),
        _c("parent_id", "INTEGER", references="categories.id")]},
    {"name": "customers", "description": "Shopper accounts.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("first_name", "TEXT", nullable=False),
        _c("last_name", "TEXT", nullable=False),
        _c("email", "TEXT", nullable=False, unique=True, check="email LIKE '%_@_%._%'"),
        _c("phone", "TEXT"),
        _c("member_since", "TEXT", nullable=False, check="date(member_since) = member_since")]},
    {"name": "addresses", "description": "Customers' address book; one default address per customer, orders ship to an address.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("customer_id", "INTEGER", nullable=False, references="customers.id"),
        _c("line1", "TEXT", nullable=False),
        _c("line2", "TEXT"),
        _c("city", "TEXT", nullable=False),
        _c("state", "TEXT", nullable=False, check="length(state) = 2"),
        _c("zip", "TEXT", nullable=False, check="length(zip) = 5 AND zip NOT GLOB '*[^0-9]*'"),
        _c("is_default", "BOOLEAN", nullable=False, default=False)]},
    {"name": "payment_methods", "description": "Saved credit cards, PayPal accounts and gift cards (with balance).", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("customer_id", "INTEGER", nullable=False, references="customers.id"),
        _c("kind", "TEXT", nullable=False, enum=PAYMENT_KINDS),
        _c("brand", "TEXT", enum=["Visa", "Mastercard", "American Express", "Discover"]),
        _c("last4", "TEXT", check="length(last4) = 4"),
        _c("paypal_email", "TEXT"),
        _c("gift_card_code", "TEXT", unique=True),
        _c("balance", "REAL", check="balance >= 0")],
     "checks": ["(kind = 'gift_card') = (balance IS NOT NULL AND gift_card_code IS NOT NULL)",
                "(kind = 'credit_card') = (brand IS NOT NULL AND last4 IS NOT NULL)",
                "(kind = 'paypal') = (paypal_email IS NOT NULL)"]},
    {"name": "products", "description": "Sellable products; each has one or more variants.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("name", "TEXT", nullable=False, unique=True),
        _c("brand", "TEXT", nullable=False),
        _c("category_id", "INTEGER", nullable=False, references="categories.id")]},
    {"name": "variants", "description": "A purchasable option combination of a product (size, colour, ...), with price and stock.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("product_id", "INTEGER", nullable=False, references="products.id"),
        _c("sku", "TEXT", nullable=False, unique=True),
        _c("options", "TEXT", nullable=False),
        _c("price", "REAL", nullable=False, check="price > 0"),
        _c("stock", "INTEGER", nullable=False, check="stock >= 0"),
        _c("status", "TEXT", nullable=False, enum=["active", "discontinued"], default="active")],
     "unique": [["product_id", "options"]]},
    {"name": "orders", "description": "Customer orders with their shipping address and paying method.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("order_number", "TEXT", nullable=False, unique=True, check="order_number GLOB '#W[0-9][0-9][0-9][0-9][0-9][0-9][0-9]'"),
        _c("customer_id", "INTEGER", nullable=False, references="customers.id"),
        _c("status", "TEXT", nullable=False, enum=ORDER_STATUSES),
        _c("placed_at", "TEXT", nullable=False),
        _c("payment_method_id", "INTEGER", nullable=False, references="payment_methods.id"),
        _c("ship_address_id", "INTEGER", nullable=False, references="addresses.id"),
        _c("cancel_reason", "TEXT", enum=CANCEL_REASONS),
        _c("cancelled_at", "TEXT")],
     "checks": ["(status = 'cancelled') = (cancel_reason IS NOT NULL)"]},
    {"name": "returns", "description": "Return / exchange requests (RMA) on delivered orders.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("rma", "TEXT", nullable=False, unique=True),
        _c("order_id", "INTEGER", nullable=False, references="orders.id"),
        _c("kind", "TEXT", nullable=False, enum=["return", "exchange"]),
        _c("status", "TEXT", nullable=False, enum=["requested", "received", "completed"]),
        _c("refund_method_id", "INTEGER", references="payment_methods.id"),
        _c("amount", "REAL", nullable=False, check="amount >= 0"),
        _c("created_at", "TEXT", nullable=False)]},
    {"name": "order_items", "description": "One unit of a variant in an order, at the price paid.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("order_id", "INTEGER", nullable=False, references="orders.id"),
        _c("variant_id", "INTEGER", nullable=False, references="variants.id"),
        _c("unit_price", "REAL", nullable=False, check="unit_price > 0"),
        _c("status", "TEXT", nullable=False, enum=ITEM_STATUSES, default="active")]},
    {"name": "return_items", "description": "Items of a return/exchange; for exchanges, the replacement item shipped instead.", "columns": [
        _c("return_id", "INTEGER", primary_key=True, references="returns.id"),
        _c("item_id", "INTEGER", primary_key=True, references="order_items.id"),
        _c("replacement_item_id", "INTEGER", unique=True, references="order_items.id")],
     "unique": [["item_id"]]},
    {"name": "fulfilments", "description": "Shipments of orders with carrier tracking.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("order_id", "INTEGER", nullable=False, references="orders.id"),
        _c("carrier", "TEXT", nullable=False, enum=CARRIERS),
        _c("tracking_number", "TEXT", nullable=False, unique=True),
        _c("shipped_on", "TEXT", nullable=False, check="date(shipped_on) = shipped_on"),
        _c("delivered_on", "TEXT", check="date(delivered_on) = delivered_on")],
     "checks": ["delivered_on IS NULL OR delivered_on >= shipped_on"]},
    {"name": "payment_transactions", "description": "Charges and refunds against payment methods.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("order_id", "INTEGER", nullable=False, references="orders.id"),
        _c("payment_method_id", "INTEGER", nullable=False, references="payment_methods.id"),
        _c("kind", "TEXT", nullable=False, enum=["charge", "refund"]),
        _c("amount", "REAL", nullable=False, check="amount > 0"),
        _c("created_at", "TEXT", nullable=False)]},
    {"name": "order_notes", "description": "Internal notes staff attach to orders.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("order_id", "INTEGER", nullable=False, references="orders.id"),
        _c("body", "TEXT", nullable=False, check="length(body) BETWEEN 1 AND 500"),
        _c("created_at", "TEXT", nullable=False)]},
    {"name": "support_tickets", "description": "Customer service tickets.", "columns": [
        _c("id", "INTEGER", primary_key=True),
        _c("customer_id", "INTEGER", nullable=False, references="customers.id"),
        _c("order_id", "INTEGER", references="orders.id"),
        _c("topic", "TEXT", nullable=False, enum=TICKET_TOPICS),
        _c("summary", "TEXT", nullable=False, check="length(summary) BETWEEN 1 AND 300"),
        _c("status", "TEXT", nullable=False, enum=["open", "resolved"], default="open"),
        _c("created_at", "TEXT", nullable=False),
        _c("resolved_at", "TEXT"),
        _c("resolution", "TEXT")]},
]

POLICY = f"""You are a back-office agent of an online store. Today is {NOW[:10]} (all times are UTC).

Identity: before reading or changing a customer's account or orders, identify the customer by email, or by first name + last name + zip code. Act only on orders and payment methods that belong to that customer. Order numbers look like '#W1234567'.

Orders move pending -> processing -> shipped -> delivered; pending orders may also be cancelled.
- Cancel: only pending orders can be cancelled, and the reason must be one of: {', '.join(repr(r) for r in CANCEL_REASONS)}. The full amount is refunded to the original payment method(s) and the items go back to stock.
- Modify a pending order: the shipping address, the payment method, or items. An item may only be swapped for a different, in-stock, active variant of the same product; the price difference is charged to (or refunded to) one payment method of the customer given by the customer. A gift card can only pay if its balance covers the amount. Changing the payment method refunds the old method and charges the new one the order total.
- Orders that are processing, shipped, delivered or cancelled cannot be cancelled or modified.
- Return or exchange: only items of delivered orders, within {RETURN_WINDOW_DAYS} days of delivery, and only items not already returned or exchanged. A return refunds each item's price paid, either to the order's original payment method or to a gift card of the same customer (no other method). An exchange swaps an item for a different in-stock active variant of the same product; the price difference is settled with a payment method of the customer. Returned items go back to stock; exchange replacements come out of stock.
- A saved payment method that was used on any order cannot be removed.
- Never change anything the customer did not ask for, and never make a change this policy forbids. If a request (or part of it) is not allowed, do not perform that part: make only the allowed changes, and `submit` with outcome "refused" (nothing allowed) or "partial" (the allowed part done), the blocking value as `answer` (e.g. the order's status "delivered", its delivery date, the gift card balance) and what you could not do and why as `message`.
- When asked a question, `submit` with outcome "done" and only the requested value(s) as `answer` (numbers as digits, lists comma-separated)."""
