"""Seeded data of the retail back office: a pure function of the spec (no wall clock)."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from typing import Any

from agentworld_envs.engine.datagen import data_generator, faker_pool, parse_now

from .schema import CANCEL_REASONS, CARRIERS, RETURN_WINDOW_DAYS, TICKET_TOPICS

# category -> (parent, [(product stem, brand)], option axes, price range)
CATALOGUE: dict[str, tuple[str, list[str], list[tuple[str, list[str]]], tuple[int, int]]] = {
    "T-Shirts": ("Apparel", ["Everyday Crew Tee", "Organic V-Neck Tee", "Performance Tee", "Graphic Logo Tee"],
                 [("size", ["S", "M", "L", "XL"]), ("color", ["black", "white", "navy", "heather grey"])], (15, 35)),
    "Hoodies": ("Apparel", ["Fleece Pullover Hoodie", "Zip-Up Hoodie", "Heavyweight Hoodie"],
                [("size", ["S", "M", "L", "XL"]), ("color", ["black", "forest green", "oatmeal"])], (40, 80)),
    "Jeans": ("Apparel", ["Slim Fit Jeans", "Relaxed Fit Jeans", "Straight Leg Jeans"],
              [("waist", ["30", "32", "34", "36"]), ("wash", ["dark", "light"])], (45, 95)),
    "Running Shoes": ("Footwear", ["Tempo Running Shoe", "Trail Runner", "Cloud Cushion Runner", "Track Spike"],
                      [("size", ["8", "9", "10", "11", "12"]), ("color", ["black", "white", "blue"])], (70, 160)),
    "Boots": ("Footwear", ["Waterproof Hiking Boot", "Chelsea Boot", "Work Boot"],
              [("size", ["8", "9", "10", "11"]), ("color", ["brown", "black"])], (90, 190)),
    "Headphones": ("Electronics", ["Wireless Earbuds", "Noise-Cancelling Headphones", "Sport Earbuds", "Studio Monitor Headphones"],
                   [("color", ["black", "white", "silver", "blue"])], (40, 300)),
    "Smartwatches": ("Electronics", ["Fitness Tracker Band", "Smartwatch Pro", "Kids Smartwatch"],
                     [("case size", ["41mm", "45mm"]), ("strap", ["silicone", "leather", "metal"])], (60, 400)),
    "Chargers": ("Electronics", ["USB-C Wall Charger", "Wireless Charging Pad", "Portable Power Bank"],
                 [("power", ["20W", "45W", "65W"]), ("color", ["black", "white"])], (15, 70)),
    "Coffee Makers": ("Home & Kitchen", ["Pour-Over Coffee Maker", "Drip Coffee Maker", "Espresso Machine", "French Press"],
                      [("capacity", ["4 cups", "8 cups", "12 cups"]), ("finish", ["black", "stainless steel"])], (25, 450)),
    "Water Bottles": ("Home & Kitchen", ["Insulated Water Bottle", "Glass Water Bottle", "Collapsible Bottle"],
                      [("capacity", ["500ml", "750ml", "1000ml"]), ("color", ["black", "green", "red", "sky blue"])], (12, 45)),
    "Desk Lamps": ("Home & Kitchen", ["LED Desk Lamp", "Architect Lamp", "Clamp Lamp"],
                   [("color", ["black", "white", "brass"]), ("bulb", ["warm", "daylight"])], (25, 120)),
    "Backpacks": ("Outdoors", ["Hiking Backpack", "Commuter Backpack", "Hydration Pack"],
                  [("capacity", ["18L", "25L", "35L"]), ("color", ["black", "olive", "orange"])], (45, 180)),
    "Tents": ("Outdoors", ["Dome Tent", "Backpacking Tent", "Family Cabin Tent"],
              [("capacity", ["2-person", "4-person", "6-person"]), ("color", ["green", "orange"])], (90, 450)),
}
BRANDS = ["Northpeak", "Urbanline", "Solace", "Kestrel", "Brightwell", "Harbor & Co", "Vanta", "Meridian"]
GROUPS = ["Apparel", "Footwear", "Electronics", "Home & Kitchen", "Outdoors"]


def _ts(moment: dt.datetime) -> str:
    return moment.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _letters(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(n))


def _insert(conn: sqlite3.Connection, table: str, rows: list[tuple[Any, ...]]) -> None:
    if rows:
        conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)


@data_generator("retail")
def generate(conn: sqlite3.Connection, spec: dict[str, Any]) -> None:
    rng = random.Random(spec["data"]["seed"])
    now = parse_now(spec["now"])
    n_customers, n_orders = spec["data"].get("customers", 280), spec["data"].get("orders", 900)

    # ---------------------------------------------------------------- catalogue
    cats, cat_id = [], {}
    for g in GROUPS:
        cat_id[g] = len(cats) + 1
        cats.append((cat_id[g], g, None))
    for name, (parent, *_rest) in CATALOGUE.items():
        cat_id[name] = len(cats) + 1
        cats.append((cat_id[name], name, cat_id[parent]))
    _insert(conn, "categories", cats)

    products, variants = [], []
    variants_of: dict[int, list[int]] = {}
    price_of: dict[int, float] = {}
    for cname, (_parent, stems, axes, (lo, hi)) in CATALOGUE.items():
        for stem in stems:
            pid = len(products) + 1
            brand = rng.choice(BRANDS)
            products.append((pid, f"{brand} {stem}", brand, cat_id[cname]))
            base = rng.randint(lo, hi) - 0.01
            combos: list[list[tuple[str, str]]] = [[]]
            for axis, values in axes:
                chosen = [v for v in values if rng.random() < 0.75] or values[:1]
                combos = [c + [(axis, v)] for c in combos for v in chosen]
            if len(combos) > 8:
                combos = sorted(rng.sample(combos, 8), key=combos.index)
            variants_of[pid] = []
            for k, combo in enumerate(combos):
                vid = len(variants) + 1
                bump = rng.choice([0, 0, 0, 5, 10, 20]) if k else 0
                price = round(base + bump, 2)
                stock = 0 if rng.random() < 0.18 else rng.randint(1, 40)
                status = "discontinued" if rng.random() < 0.04 else "active"
                opts = ", ".join(f"{a}: {v}" for a, v in combo)
                variants.append((vid, pid, f"{stem[:3].upper()}-{pid:03d}-{k + 1:02d}", opts, price, stock, status))
                variants_of[pid].append(vid)
                price_of[vid] = price
    _insert(conn, "products", products)
    _insert(conn, "variants", variants)

    # ---------------------------------------------------------------- customers + payment methods
    firsts, lasts = faker_pool("en_US", "first_name"), faker_pool("en_US", "last_name")
    streets, seconds = faker_pool("en_US", "street_address"), faker_pool("en_US", "secondary_address")
    cities, states, zips = faker_pool("en_US", "city"), faker_pool("en_US", "state_abbr"), faker_pool("en_US", "zipcode")
    domains = ["gmail.com", "yahoo.com", "outlook.com", "icloud.com", "proton.me", "example.com"]
    customers, pms, seen_names, seen_emails = [], [], set(), set()
    addresses: list[tuple[Any, ...]] = []
    default_addr: dict[int, int] = {}
    other_addr: dict[int, int] = {}
    methods_of: dict[int, list[tuple[int, str]]] = {}
    gift_balance: dict[int, float] = {}
    for cid in range(1, n_customers + 1):
        while True:
            first, last, zipc = rng.choice(firsts), rng.choice(lasts), rng.choice(zips)
            if (first, last) not in seen_names:
                break
        seen_names.add((first, last))
        email = f"{first}.{last}".lower().replace(" ", "").replace("'", "")
        while email + "@" in seen_emails:
            email += str(rng.randint(1, 99))
        seen_emails.add(email + "@")
        email = f"{email}@{rng.choice(domains)}"
        phone = f"{rng.randint(201, 989)}-555-{_digits(rng, 4)}"
        created = (now - dt.timedelta(days=rng.randint(150, 1500))).date().isoformat()
        customers.append((cid, first, last, email, phone, created))
        default_addr[cid] = len(addresses) + 1
        addresses.append((len(addresses) + 1, cid, rng.choice(streets), rng.choice(seconds) if rng.random() < 0.3 else None,
                          rng.choice(cities), rng.choice(states), zipc, 1))
        methods_of[cid] = []
        kinds = ["credit_card"] if rng.random() < 0.85 else []
        if rng.random() < 0.45 or not kinds:
            kinds.append("paypal")
        if rng.random() < 0.4:
            kinds.append("gift_card")
        if rng.random() < 0.2:
            kinds.append("credit_card")
        for kind in kinds:
            mid = len(pms) + 1
            if kind == "credit_card":
                pms.append((mid, cid, kind, rng.choice(["Visa", "Visa", "Mastercard", "American Express", "Discover"]),
                            _digits(rng, 4), None, None, None))
            elif kind == "paypal":
                pms.append((mid, cid, kind, None, None, email, None, None))
            else:
                bal = float(rng.choice([0, 25, 50, 75, 100, 150, 200, 250]) + rng.randint(0, 99))
                gift_balance[mid] = bal
                pms.append([mid, cid, kind, None, None, None, f"GC-{_letters(rng, 4)}-{_letters(rng, 4)}", bal])
            methods_of[cid].append((mid, kind))
    _insert(conn, "customers", customers)

    # ---------------------------------------------------------------- orders
    orders, items, fulfils, txns, rets, ret_items, notes, tickets = [], [], [], [], [], [], [], []
    stock_delta: dict[int, int] = {}
    seen_numbers, seen_tracking = set(), set()
    all_variants = [v[0] for v in variants]
    for oid in range(1, n_orders + 1):
        cid = rng.randint(1, n_customers)
        age = rng.random() ** 1.6 * 120  # days; recent orders are more frequent
        placed = now - dt.timedelta(days=age, seconds=rng.randint(0, 3600))
        if age < 2:
            status = rng.choice(["pending", "pending", "pending", "processing"])
        elif age < 4:
            status = rng.choice(["pending", "processing", "shipped", "shipped", "cancelled"])
        elif age < 9:
            status = rng.choice(["shipped", "delivered", "delivered", "delivered", "cancelled"])
        else:
            status = "cancelled" if rng.random() < 0.08 else "delivered"
        while True:
            number = f"#W{rng.randint(1000000, 9999999)}"
            if number not in seen_numbers:
                break
        seen_numbers.add(number)
        # items: 1-4 units of distinct active variants
        chosen: list[int] = []
        for _ in range(rng.choice([1, 1, 1, 2, 2, 2, 3, 4])):
            vid = rng.choice(all_variants)
            if vid not in chosen:
                chosen.append(vid)
        total = round(sum(price_of[v] for v in chosen), 2)
        usable = [m for m, k in methods_of[cid] if k != "gift_card" or gift_balance[m] >= total]
        pm = rng.choice(usable)
        if pm in gift_balance:
            gift_balance[pm] = round(gift_balance[pm] - total, 2)
        ship = default_addr[cid]
        if rng.random() < 0.08:
            if cid not in other_addr:
                other_addr[cid] = len(addresses) + 1
                addresses.append((len(addresses) + 1, cid, rng.choice(streets), None, rng.choice(cities),
                                  rng.choice(states), rng.choice(zips), 0))
            ship = other_addr[cid]
        reason = rng.choice(CANCEL_REASONS) if status == "cancelled" else None
        cancelled_at = _ts(placed + dt.timedelta(hours=rng.randint(1, 30))) if reason else None
        orders.append((oid, number, cid, status, _ts(placed), pm, ship, reason, cancelled_at))
        txns.append((len(txns) + 1, oid, pm, "charge", total, _ts(placed)))
        if status == "cancelled":
            txns.append((len(txns) + 1, oid, pm, "refund", total, cancelled_at))
            if pm in gift_balance:
                gift_balance[pm] = round(gift_balance[pm] + total, 2)
        item_ids = []
        for vid in chosen:
            item_ids.append(len(items) + 1)
            items.append([len(items) + 1, oid, vid, price_of[vid], "active"])
            if status != "cancelled":
                stock_delta[vid] = stock_delta.get(vid, 0) + 1
        if status in ("shipped", "delivered"):
            shipped = placed + dt.timedelta(hours=rng.randint(20, 60))
            delivered = shipped + dt.timedelta(days=rng.randint(2, 6), hours=rng.randint(0, 12))
            if status == "delivered" and delivered > now - dt.timedelta(hours=2):
                delivered = now - dt.timedelta(hours=rng.randint(2, 20))
            carrier = rng.choice(CARRIERS)
            while True:
                tn = {"UPS": "1Z" + _letters(rng, 6) + _digits(rng, 8), "FedEx": _digits(rng, 12),
                      "USPS": "9400" + _digits(rng, 12), "DHL": "JD" + _digits(rng, 10)}[carrier]
                if tn not in seen_tracking:
                    break
            seen_tracking.add(tn)
            fulfils.append((len(fulfils) + 1, oid, carrier, tn, shipped.date().isoformat(), delivered.date().isoformat() if status == "delivered" else None))
            # a few historical returns on older delivered orders
            if status == "delivered" and rng.random() < 0.07 and delivered < now - dt.timedelta(days=3):
                rid = len(rets) + 1
                back = [i for i in item_ids if rng.random() < 0.6] or item_ids[:1]
                amount = round(sum(items[i - 1][3] for i in back), 2)
                when = delivered + dt.timedelta(days=rng.randint(1, min(RETURN_WINDOW_DAYS - 2, max(1, (now - delivered).days - 1))))
                refund_to = pm
                rets.append((rid, f"RMA-{_digits(rng, 6)}", oid, "return", "completed", refund_to, amount, _ts(when)))
                txns.append((len(txns) + 1, oid, refund_to, "refund", amount, _ts(when)))
                if refund_to in gift_balance:
                    gift_balance[refund_to] = round(gift_balance[refund_to] + amount, 2)
                for i in back:
                    items[i - 1][4] = "returned"
                    ret_items.append((rid, i, None))
                    stock_delta[items[i - 1][2]] -= 1
        if rng.random() < 0.06:
            notes.append((len(notes) + 1, oid, rng.choice(["Customer asked for gift wrapping.", "Leave at the back door.",
                                                          "Address verified by phone.", "VIP customer: handle with care."]),
                          _ts(placed + dt.timedelta(hours=1))))
        if rng.random() < 0.08:
            topic = rng.choice(TICKET_TOPICS)
            opened = placed + dt.timedelta(days=min(age, rng.uniform(0, 5)))
            resolved = rng.random() < 0.6 and opened < now - dt.timedelta(days=1)
            tickets.append((len(tickets) + 1, cid, oid, topic, f"Asked about {topic}.",
                            "resolved" if resolved else "open", _ts(opened),
                            _ts(opened + dt.timedelta(hours=20)) if resolved else None,
                            "Answered by email." if resolved else None))

    for row in pms:
        if row[2] == "gift_card":
            row[7] = gift_balance[row[0]]
    _insert(conn, "addresses", addresses)
    _insert(conn, "payment_methods", [tuple(r) for r in pms])
    _insert(conn, "orders", orders)
    _insert(conn, "returns", rets)
    _insert(conn, "order_items", [tuple(r) for r in items])
    _insert(conn, "return_items", ret_items)
    _insert(conn, "fulfilments", fulfils)
    _insert(conn, "payment_transactions", txns)
    _insert(conn, "order_notes", notes)
    _insert(conn, "support_tickets", tickets)
    # Stock on hand is what is left after open orders were reserved (never below zero).
    conn.executemany("UPDATE variants SET stock = MAX(0, stock - ?) WHERE id = ? AND stock > 0",
                     [(max(0, d) // 3, v) for v, d in sorted(stock_delta.items())])
