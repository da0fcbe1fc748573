"""Lazy re-exports of a package facade (PEP 562): a name is imported from the module that defines it on its first
use, so that importing the package, and the command line's ``--help``, stay fast (docs/benchmarks.md, start-up).

Used by ``pyterrier_nuggets/__init__.py`` and ``pipeline/__init__.py``::

    __getattr__, __dir__ = lazy_exports(__name__, globals(), {"run_main_job": "pyterrier_nuggets.pipeline.main_job"})
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable


def lazy_exports(package: str, namespace: dict, exports: dict[str, str], submodules: Iterable[str] = ()
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package whose public names are imported on first use.

    :param package: the package's ``__name__``.
    :param namespace: the package's ``globals()``: a name imported once is stored there, so the next use is a
        plain look-up.
    :param exports: public name -> the module that defines it.
    :param submodules: names of the package's submodules reachable as attributes without an import statement.
    """
    submodules = set(submodules)

    def __getattr__(name: str):
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports) | submodules)

    return __getattr__, __dir__
