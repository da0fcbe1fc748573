"""Start-up hook (loaded from ``pyterrier_nuggets_hooks.pth``) and PyTerrier's entry point: light, imports nothing
heavy.

ir_measures and ir_datasets have no plug-in entry points, so the plain ``ir_measures`` and ``ir_datasets`` command
lines cannot discover our measures and datasets by themselves. This hook watches for the first import of
``ir_measures`` (or ``ir_datasets``) and imports ``ir_measures_ext`` (or ``datasets_ext``) right after it, which
registers them. PyTerrier loads ``pt.nuggets`` through :func:`pyterrier_module` (its ``pyterrier.modules`` entry
point).

The package is a guest: any failure of it while a host library is imported is one line on stderr, naming the package
and the switch, and the host goes on as without it. ``PYTERRIER_NUGGETS_NO_HOOK=1`` switches every automatic load off
(the hook and the entry point); ``import pyterrier_nuggets`` (or ``ir_measures_ext``, ``datasets_ext``) still loads
the package by hand.
"""
import importlib
import os
import sys

SWITCH = "PYTERRIER_NUGGETS_NO_HOOK"
EXTENSIONS = {"ir_measures": "ir_measures_ext", "ir_datasets": "datasets_ext"}


def switched_off() -> bool:
    """Whether ``PYTERRIER_NUGGETS_NO_HOOK`` is set (to anything but empty)."""
    return bool(os.environ.get(SWITCH))


def _warn_failure(package: str, host: str, exc: BaseException) -> None:
    """One line on stderr: which part of the package failed, why, and how to switch it off."""
    why = " ".join(f"{type(exc).__name__}: {exc}".split())
    print(f"pyterrier-nuggets: {package} could not be loaded ({why:.300}); {host} goes on without it. Set {SWITCH}=1 "
          "to stop loading pyterrier-nuggets automatically, or reinstall it.", file=sys.stderr)


class _ThenImport:
    """Wraps a module's loader: executes the module, then imports its extension. (A plain class, not an
    ``importlib.abc`` subclass: importing ``importlib.abc`` would cost every Python start-up in this environment
    about 15 ms.)"""

    def __init__(self, loader, host, extension):
        self.loader = loader
        self.host = host
        self.extension = extension

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        program = _command_line()
        try:
            importlib.import_module(self.extension)
            if program == self.host == "ir_measures":
                importlib.import_module("ir_measures_ext.command_line").adapt(program)
        except Exception as exc:  # a guest never takes its host down
            _warn_failure(self.extension, self.host, exc)
        if program == self.host:
            _one_line_input_errors(program)

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
                    spec.loader = _ThenImport(spec.loader, fullname, extension)
                return spec
        return None


def _command_line() -> str | None:
    """``ir_measures`` or ``ir_datasets`` when this process is that library's command line (its script, or ``python
    -m``), else None."""
    argv = getattr(sys, "orig_argv", sys.argv)
    script = os.path.basename(sys.argv[0] if sys.argv else "")
    for program in EXTENSIONS:
        if script == program or any(a == "-m" and b == program for a, b in zip(argv, argv[1:])):
            return program
    return None


def _one_line_input_errors(program: str) -> None:
    """An input error of ours (``nuggets_core.errors.InvalidInput``: a run given as qrels, a field that cannot be read,
    a nugget row that cannot be scored) ends ``program`` with one line on stderr, as our own command line does, instead
    of a traceback; so does a file that cannot be opened (``FileNotFoundError`` and the other ``OSError`` naming a
    file), as ir_measures already says of a missing qrels file. Every other exception keeps its traceback."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        ours = kind.__module__ == "nuggets_core.errors" and kind.__name__ == "InvalidInput"
        if ours or (issubclass(kind, OSError) and getattr(value, "filename", None) is not None):
            message = value if ours else f"{value.filename}: {value.strerror}"
            print(f"{program}: error: {message}", file=sys.stderr)
            return
        previous(kind, value, tb)
    sys.excepthook = hook


def pyterrier_module():
    """PyTerrier's ``pyterrier.modules`` entry point (``pt.nuggets``): the ``pyterrier_nuggets`` package, or, when it
    is switched off or fails to load, a stand-in whose every attribute says why (PyTerrier itself goes on)."""
    import types
    if switched_off():
        reason = (f"pyterrier-nuggets is switched off ({SWITCH}=1): `import pyterrier_nuggets` to use it, or unset "
                  f"{SWITCH}")
    else:
        try:
            return importlib.import_module("pyterrier_nuggets")
        except Exception as exc:  # a guest never takes its host down
            _warn_failure("pyterrier_nuggets", "pyterrier", exc)
            reason = f"pyterrier_nuggets could not be loaded ({type(exc).__name__}: {exc})"
    stand_in = types.ModuleType("pyterrier_nuggets", f"pt.nuggets: {reason}")

    def __getattr__(name):
        raise AttributeError(f"pt.nuggets.{name}: {reason}")
    stand_in.__getattr__ = __getattr__
    return stand_in


def install() -> None:
    if switched_off():
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
