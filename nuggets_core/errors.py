"""The two kinds of error a user can act on, declared once for the whole distribution (``ir_measures_ext``,
``datasets_ext`` and ``pyterrier_nuggets`` all raise them).

- :class:`InvalidInput`: a file, an option or an argument that cannot be used (what was wrong, where, what to
  do). A ``ValueError``, so ``except ValueError`` still catches it.
- :class:`SetupError`: something this machine lacks (a package, a model, a licensed file, a download).

The command line prints these (and OS errors such as a missing file) as one line with exit code 2; any other
exception is a bug of the package and keeps its traceback (docs/cli.md, "Exit codes").
"""


class InvalidInput(ValueError):
    """Bad input or usage: the message says what was wrong, where, and what to do. ``cli``: the same message
    for a command-line user where it differs (naming the options, e.g. ``--on-invalid drop``, instead of the
    Python arguments, e.g. ``on_invalid='drop'``); the command line prints :meth:`for_command_line`."""

    def __init__(self, *args, cli: str | None = None):
        super().__init__(*args)
        self.cli = cli

    def for_command_line(self) -> str:
        return self.cli or str(self)


class SetupError(RuntimeError):
    """Something the machine lacks (a package, a model file, a licensed file, a download): the message says
    how to provide it."""
