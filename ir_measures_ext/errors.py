"""The error kinds a user can act on: :class:`InvalidInput` and :class:`SetupError`, the classes of
:mod:`nuggets_core.errors` (declared there once for the whole distribution, so that ``datasets_ext`` raises them
without importing ir_measures), and :class:`RowError`, an :class:`InvalidInput` about one row of a run or of qrels as
the measures read them."""
from nuggets_core.errors import InvalidInput, SetupError

__all__ = ["InvalidInput", "RowError", "SetupError"]


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
