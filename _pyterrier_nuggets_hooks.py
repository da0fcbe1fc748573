"""Start-up hook (loaded from ``pyterrier_nuggets_hooks.pth``): light, imports nothing heavy.

ir_measures and ir_datasets have no plug-in entry points, so the plain ``ir_measures`` and ``ir_datasets``
command lines cannot discover our measures and datasets by themselves. This hook watches for the first
import of ``ir_measures`` (or ``ir_datasets``) and imports ``ir_measures_ext`` (or ``datasets_ext``)
right after it, which registers them. Set ``PYTERRIER_NUGGETS_NO_HOOK=1`` to switch it off.
"""
import importlib
import os
import sys

EXTENSIONS = {"ir_measures": "ir_measures_ext", "ir_datasets": "datasets_ext"}


class _ThenImport:
    """Wraps a module's loader: executes the module, then imports its extension. (A plain class, not an
    ``importlib.abc`` subclass: importing ``importlib.abc`` would cost every Python start-up in this environment
    about 15 ms.)"""

    def __init__(self, loader, extension):
        self.loader = loader
        self.extension = extension

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        try:
            importlib.import_module(self.extension)
        except ImportError as exc:  # a broken extension must not break the library it extends
            print(f"[pyterrier-nuggets] could not load {self.extension}: {exc}", file=sys.stderr)
        if self.extension == "ir_measures_ext" and _ir_measures_command_line():
            _one_line_input_errors("ir_measures")

    def __getattr__(self, name):
        return getattr(self.loader, name)


class _Finder:
    """A meta path finder (the protocol of ``importlib.abc.MetaPathFinder``) for the extended libraries."""

    def find_spec(self, fullname, path, target=None):
        extension = EXTENSIONS.get(fullname)
        if extension is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenImport(spec.loader, extension)
                return spec
        return None


def _ir_measures_command_line() -> bool:
    """Whether this process is the plain ``ir_measures`` command line (its script, or ``python -m ir_measures``)."""
    argv = getattr(sys, "orig_argv", sys.argv)
    return os.path.basename(sys.argv[0] if sys.argv else "") == "ir_measures" or \
        any(a == "-m" and b == "ir_measures" for a, b in zip(argv, argv[1:]))


def _one_line_input_errors(program: str) -> None:
    """An input error of our measures (``ir_measures_ext.errors.InvalidInput``: a run given as qrels, a nugget row
    that cannot be scored) ends ``program`` with one line on stderr, as our own command line does, instead of a
    traceback; every other exception keeps its traceback."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        if kind.__module__ == "ir_measures_ext.errors" and kind.__name__ == "InvalidInput":
            print(f"{program}: error: {value}", file=sys.stderr)
            return
        previous(kind, value, tb)
    sys.excepthook = hook


def install() -> None:
    if os.environ.get("PYTERRIER_NUGGETS_NO_HOOK"):
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
