"""Descriptive statistics of a nugget evaluation, the columns of [nugget-recall Table 4]: topics, nuggets per topic,
nugget length, share of vital / okay nuggets, and the distribution of assignment labels, per condition."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import pandas as pd

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.formats import AssignedAnswer, AssignmentSet, NuggetSet
from pyterrier_nuggets.records import Nugget

COLUMNS = ("topics", "nuggets_per_topic", "nugget_words", "vital_pct", "okay_pct", "answers", "not_support_pct",
           "partial_support_pct", "support_pct")


def describe(nuggets: NuggetSet | Sequence[Nugget] | None = None,
             assignments: AssignmentSet | Sequence[AssignedAnswer] | None = None) -> dict[str, float]:
    """The descriptive statistics of [nugget-recall Table 4] for one condition.

    ``nugget_words`` is the mean number of whitespace-separated words (the paper counts tokens). Percentages are of
    all nuggets / all assignments; a column without data is NaN.

    :param nuggets: the nuggets of the nugget columns (without it: the nuggets of the assignment file, one list per
        topic).
    :param assignments: the assignments of the assignment columns (every assigned nugget of every answer of every
        run).
    :returns: column -> value.
    """
    if nuggets is None and assignments is None:
        raise InvalidInput("describe needs nuggets, assignments or both")
    answers = list(assignments.answers if isinstance(assignments, AssignmentSet) else assignments or [])
    if nuggets is None:  # the nuggets of each topic, from its first answer
        first: dict[str, AssignedAnswer] = {}
        for answer in answers:
            first.setdefault(answer.qid, answer)
        nuggets = [n for answer in first.values() for n in answer.nuggets]
    nugget_list = list(nuggets.nuggets if isinstance(nuggets, NuggetSet) else nuggets)
    nan = float("nan")
    topics = {n.qid for n in nugget_list}
    importance = Counter(n.importance for n in nugget_list)
    labels = Counter(a.assignment for answer in answers for a in answer.assignments)
    n_nuggets, n_labels = len(nugget_list), sum(labels.values())
    pct = lambda count, total: 100.0 * count / total if total else nan  # noqa: E731
    return {
        "topics": len(topics),
        "nuggets_per_topic": n_nuggets / len(topics) if topics else nan,
        "nugget_words": sum(len(n.text.split()) for n in nugget_list) / n_nuggets if n_nuggets else nan,
        "vital_pct": pct(importance[ids.VITAL], n_nuggets),
        "okay_pct": pct(importance[ids.OKAY], n_nuggets),
        "answers": len(answers),
        "not_support_pct": pct(labels[ids.NOT_SUPPORT], n_labels),
        "partial_support_pct": pct(labels[ids.PARTIAL_SUPPORT], n_labels),
        "support_pct": pct(labels[ids.SUPPORT], n_labels),
    }


def describe_conditions(conditions: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row of :func:`describe` per condition ([nugget-recall Table 4]).

    :param conditions: condition name -> the keyword arguments of :func:`describe`, e.g.
        ``{"AutoNuggets / AutoAssign": {"assignments": a}, "AutoNuggets+Edits / ManualAssign": {"nuggets": n,
        "assignments": m}}``.
    """
    rows = {name: describe(**spec) for name, spec in conditions.items()}
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS))
