"""Named plug-in points (Python tools, verifiers, data generators, spec builders, task sources).

A :class:`Registry` maps names to callables filled in by a decorator. When a name is
missing, its ``loader`` imports the module that registers it, so hand-built domains and
the task package load only when an environment needs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable)


class Registry(Generic[F]):
    def __init__(self, kind: str, loader: Callable[[str], object] | None = None):
        self.kind = kind
        self._items: dict[str, F] = {}
        self._loader = loader

    def register(self, name: str, replace: bool = False) -> Callable[[F], F]:
        """Decorator: register ``fn`` under ``name``.

        A name already taken by another function raises unless ``replace=True``: a silent
        replacement would change what existing specs do. Re-registering the same function
        (same module and qualified name, e.g. after ``importlib.reload``) is allowed.
        """

        def deco(fn: F) -> F:
            old = self._items.get(name)
            if old is not None and not replace and _identity(old) != _identity(fn):
                raise ValueError(f"a {self.kind} named {name!r} is already registered ({_identity(old)}); "
                                 "pass replace=True to replace it")
            self._items[name] = fn
            return fn

        return deco

    def get(self, name: str) -> F:
        if name not in self._items and self._loader is not None:
            self._loader(name)
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"no {self.kind} registered as {name!r}") from None

    def __contains__(self, name: str) -> bool:
        return name in self._items


def _identity(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def load_domain_of(name: str) -> None:
    """Import the hand-built domain that owns ``domain.thing`` (or ``domain``)."""
    from . import domains

    domains.load(name.split(".")[0])
