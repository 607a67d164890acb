"""Named plug-in points (Python tools, verifiers, data generators, spec builders, task sources).

A :class:`Registry` maps names to callables. A name is bound in one of three ways:

* by a string ``"package.module:attr"`` given when the registry is made or through
  :meth:`Registry.add`: nothing is imported until the name is first used, and the string is
  the whole binding (no import has to happen first for the name to exist);
* by a decorator, :meth:`Registry.register` (hand-built domains register their Python hooks this
  way; the catalogue sets the hook registries' ``loader`` to import the domain that owns a name
  the first time it is asked for: the engine modules that hold the registries never name a domain);
* by using ``"package.module:attr"`` itself as the name (a spec's Python hooks may do that).

An unknown name is a :class:`KeyError` naming the registry, never a fallback to something else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def resolve(target: str) -> Any:
    """The object ``"package.module:attr"`` names (``attr`` may be dotted), imported now.

    Raises :class:`ImportError` (the module cannot be imported, or has no such attribute) or
    :class:`ValueError` (not of the form ``module:attr``), each naming ``target``.
    """
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{target!r} is not of the form 'package.module:attr'")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"cannot import {module!r} (named by {target!r}): {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(f"{module!r} has no attribute {attr!r} (named by {target!r})") from None
    return obj


def entry_point(group: str, name: str) -> Any:
    """Load the entry point ``name`` of ``group`` (declared by an installed distribution).

    :class:`KeyError` when no installed distribution declares it.
    """
    for ep in entry_points(group=group):
        if ep.name == name:
            return ep.load()
    raise KeyError(f"no {name!r} in the {group!r} entry points of the installed packages "
                   "(reinstall agentworld: pip install -e .)")


class Registry(Generic[F]):
    """Names -> callables of one kind (``kind`` names it in errors).

    ``targets``: names bound to ``"module:attr"`` strings, resolved on first :meth:`get`.
    ``loader(name)``: called once for a name that is not bound yet, to import the code that
    registers it (hand-built domains).
    """

    def __init__(self, kind: str, loader: Callable[[str], object] | None = None,
                 targets: Mapping[str, str] | None = None):
        self.kind = kind
        self._items: dict[str, F] = {}
        self._targets: dict[str, str] = {}
        #: Called once for a name not bound yet, to import the code that registers it (may be set later).
        self.loader = loader
        for name, target in (targets or {}).items():
            self.add(name, target)

    def register(self, name: str, replace: bool = False) -> Callable[[F], F]:
        """Decorator: register ``fn`` under ``name``.

        A name already taken by another function raises unless ``replace=True``: a silent
        replacement would change what existing specs do. Re-registering the same function
        (same module and qualified name, e.g. after ``importlib.reload``) is allowed.
        """

        def deco(fn: F) -> F:
            old = self._identity_of(name)
            if old is not None and not replace and old != _identity(fn):
                raise ValueError(f"a {self.kind} named {name!r} is already registered ({old}); "
                                 "pass replace=True to replace it")
            self._targets.pop(name, None)
            self._items[name] = fn
            return fn

        return deco

    def add(self, name: str, target: str, replace: bool = False) -> None:
        """Bind ``name`` to the ``"module:attr"`` string ``target``; imported when ``name`` is first used."""
        module, sep, attr = target.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"{self.kind} {name!r}: {target!r} is not of the form 'package.module:attr'")
        old = self._identity_of(name)
        new = f"{module}.{attr}"
        if old is not None and not replace and old != new:
            raise ValueError(f"a {self.kind} named {name!r} is already registered ({old}); "
                             "pass replace=True to replace it")
        self._items.pop(name, None)
        self._targets[name] = target

    def get(self, name: str) -> F:
        """The callable bound to ``name``; :class:`KeyError` if there is none."""
        fn = self._items.get(name)
        if fn is not None:
            return fn
        target = self._targets.get(name)
        if target is None and ":" in name:
            target = name  # a "module:attr" name is its own binding
        if target is not None:
            fn = resolve(target)
            if not callable(fn):
                raise ValueError(f"{self.kind} {name!r}: {target!r} is not callable")
            self._items.setdefault(name, fn)
            return self._items[name]
        if self.loader is not None:
            self.loader(name)
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"no {self.kind} registered as {name!r}") from None

    def names(self) -> list[str]:
        """Every bound name (``"module:attr"`` names count only once used)."""
        return sorted({*self._items, *self._targets})

    def __contains__(self, name: str) -> bool:
        return name in self._items or name in self._targets

    def _identity_of(self, name: str) -> str | None:
        if name in self._items:
            return _identity(self._items[name])
        target = self._targets.get(name)
        return target.replace(":", ".") if target is not None else None


def _identity(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
