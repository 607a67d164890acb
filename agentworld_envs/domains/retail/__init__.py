"""``agentworld/retail-v0``: the hand-built online-retail back office (flagship environment).

Customers with addresses and payment methods (cards, PayPal, gift cards with balances), a
catalogue of products with variants and stock, orders with items, shipments, payments and
returns, and the real workflows (cancel, modify, return, exchange) with their rules.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from agentworld_envs.engine.spec import SPEC_VERSION

from . import data  # noqa: F401  (registers the data generator)
from .schema import NOW, POLICY, TABLES
from .tools import TOOLS

STATE_SPEC: dict[str, Any] = {
    "spec_version": SPEC_VERSION,
    "id": "retail",
    "title": "Online retail back office",
    "description": ("Customer service and operations back office of an online store: customers, payment methods "
                    "and gift cards, a catalogue with variants and stock, orders, shipments, payments, returns "
                    "and exchanges, governed by a written policy."),
    "taxonomy": {"l1": "commerce-retail", "l2": "online-stores", "l3": "Online retail back office"},
    "now": NOW,
    "policy": POLICY,
    "max_turns": 30,
    "tables": TABLES,
    "data": {"seed": 20260316, "generator": "retail"},
    "tools": TOOLS,
}


@functools.cache
def _cached_spec() -> dict[str, Any]:
    from .tasks import build_tasks

    spec = copy.deepcopy(STATE_SPEC)
    spec["tasks"] = build_tasks(spec)
    return spec


def build_spec() -> dict[str, Any]:
    """The full retail spec (cached; a deep copy so callers may mutate it)."""
    return copy.deepcopy(_cached_spec())
