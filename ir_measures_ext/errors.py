"""The two kinds of error a user can act on, declared once for the whole distribution (``ir_measures_ext``,
``datasets_ext`` and ``pyterrier_nuggets`` all raise them).

- :class:`InvalidInput`: a file, an option or an argument that cannot be used (what was wrong, where, what to
  do). A ``ValueError``, so ``except ValueError`` still catches it.
- :class:`RowError`: an :class:`InvalidInput` about one row of a run or qrels (it keeps the row, for a caller that
  knows the file and line).
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


class RowError(InvalidInput):
    """An :class:`InvalidInput` about one row of a run or of qrels, as the measures read them (rows, not files: the
    plain ``ir_measures`` command line and pt.Experiment hand over rows). It keeps the row, so that a caller that
    read the rows from a file names the file, the line and the field (``pyterrier-nuggets table``).

    :param source: ``"run"`` or ``"nugget qrels"``.
    :param qid: the row's topic.
    :param doc_id: the row's id (nugget, citation, ...).
    :param field_name: the field that is wrong: ``docno`` or ``score`` of a run row, ``nugget_id`` or ``relevance`` of
        a qrels row.
    :param problem: what is wrong with it.
    """

    def __init__(self, source: str, qid: str, doc_id: str, field_name: str, problem: str):
        self.source, self.qid, self.doc_id, self.field, self.problem = source, qid, doc_id, field_name, problem
        super().__init__(f"{source} row {qid} {doc_id}: {problem}")


class SetupError(RuntimeError):
    """Something the machine lacks (a package, a model file, a licensed file, a download): the message says
    how to provide it."""
