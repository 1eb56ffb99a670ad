"""Deprecation shims for public names that moved to another module (QuantEcon's PEP 562 pattern).

A module whose names moved ends with ``__getattr__ = forwarder(__name__, MOVED)``;
reading a moved name warns once per use site with :class:`DeprecationWarning`
and returns the object from its new home, so an older notebook still runs.
Names that did not move never pass through here (module ``__getattr__`` is
only consulted for missing attributes), so calls do not warn.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def forwarder(module: str, moved: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module`` forwarding each old name to ``moved[name]``.

    ``moved`` maps an old name to its new home as ``"helpers.<module>.<name>"``.
    Any other missing name raises :class:`AttributeError`, as a module would.
    """

    def __getattr__(name: str) -> Any:
        if name in moved:
            target = moved[name]
            home, _, new = target.rpartition(".")
            warnings.warn(
                f"{module}.{name} is now {target}", DeprecationWarning, stacklevel=2
            )
            return getattr(importlib.import_module(home), new)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
