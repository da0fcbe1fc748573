"""A judge run as an ensemble of models (UMBRELA judges relevance with several LLMs and combines their grades):
:class:`JudgeEnsemble`.

The members are judges of one class and one setting (their :meth:`~.base.LLMJudge.ensemble_labels` agree),
usually on different LLM clients. Each member judges the whole input through its own client (cache, Batch API,
limits: each member's own); the ensemble then gives each item the consensus of the members' labels
(:func:`ir_measures_ext.scoring.consensus_label`: majority, mean or median in the labels' order, ties broken by
a stated rule) and recomputes the columns that follow the label (``score``). Judges that label items:
``RelevanceJudge``, ``SupportJudge``, ``NuggetAssigner``, ``RubricJudge``, ``LLMMatcher``. An item that some
member did not label (a failed judgment) is never combined from the others: it is a failure of the ensemble,
handled by its ``on_failure``.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import CONSENSUS_METHODS, TIE_RULES, consensus_label
from pyterrier_nuggets.judges.base import EnsembleLabels, LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, FAILED, Failure, Unit
from pyterrier_nuggets.llm import LLMClient, Outcome

ROW = "_ensemble_row"  # the input row an output row comes from, carried through the members


def _missing(value) -> bool:
    return value is None or value == FAILED or (isinstance(value, float) and value != value)


class JudgeEnsemble(LLMJudge):
    """Several judges of one kind (e.g. ``RelevanceJudge`` on three models) as one judge.

    Output: the first member's output with the label column replaced by the consensus, the derived columns
    (``score``) recomputed, and ``labels`` (the members' labels, in member order) and ``tie`` (whether the
    consensus broke a tie) added.

    :param judges: two or more judges of the same class whose ``ensemble_labels()`` agree (same labels, same label
        column).
    :param combine: ``"majority"`` (default; the most frequent label), ``"mean"`` or ``"median"`` (of the labels'
        positions, rounded; ordinal labels only).
    :param ties: ``"low"`` (default) or ``"high"``: a tie (several most frequent labels, a mean or median
        half-way) goes to the lower or higher label.
    :param on_failure: ``"raise"`` (default; after all members ran) or ``"exclude"`` (an item without a label from
        every member is left out and reported).

    Examples::

        judges = [RelevanceJudge(LLMClient(model=m), against="sub_narratives") for m in ("qwen", "ministral", "gpt")]
        qrels = JudgeEnsemble(judges, combine="mean")(candidates)
    """

    step = "ensemble"
    step_name = "ensemble judgment"
    repr_params = ("combine", "ties")
    failure_policies = {EXCLUDE: "items without a label from every member are left out, and reported"}
    plan_assumption = "each member's own"

    def __init__(self, judges: Sequence[LLMJudge], *, combine: str = "majority", ties: str = "low",
                 on_failure: str = "raise"):
        judges = list(judges)
        if len(judges) < 2:
            raise InvalidInput("an ensemble needs at least two judges")
        if combine not in CONSENSUS_METHODS:
            raise InvalidInput(f"combine must be one of {CONSENSUS_METHODS}, got {combine!r}")
        if ties not in TIE_RULES:
            raise InvalidInput(f"ties must be one of {TIE_RULES}, got {ties!r}")
        first = judges[0]
        if not isinstance(first, LLMJudge) or first.ensemble_labels() is None:
            raise TypeError(f"{type(first).__name__} does not label items one by one: it cannot be an ensemble "
                            "member (members: RelevanceJudge, SupportJudge, NuggetAssigner, RubricJudge, LLMMatcher)")
        spec = first.ensemble_labels()
        for j in judges[1:]:
            if type(j) is not type(first) or j.ensemble_labels() != spec:
                raise InvalidInput(f"ensemble members must be judges of one class and setting; {j!r} differs from "
                                 f"{first!r}")
        if combine != "majority" and not spec.ordinal:
            raise InvalidInput(f"the {combine} of {spec.column} labels means nothing: they are not ordinal (use majority)")
        self.judges = judges
        self.combine = combine
        self.ties = ties
        self.spec: EnsembleLabels = spec
        self.setup(None, first.template, 0, on_failure)

    def __repr__(self) -> str:
        return (f"JudgeEnsemble({', '.join(repr(j) for j in self.judges)}, combine={self.combine!r}, "
                f"ties={self.ties!r})")

    def client(self) -> LLMClient:
        """The first member's client (each member asks through its own)."""
        return self.judges[0].client()

    def ensemble_labels(self) -> EnsembleLabels:
        return self.spec

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        spec = self.spec
        tagged = inp.reset_index(drop=True).assign(**{ROW: range(len(inp))})
        outputs, failures = [], []
        for k, judge in enumerate(self.judges):
            out, member_failures = judge.run(tagged)
            outputs.append(out)
            failures += [Failure(f.stage, f.qid, f"member {k} ({_name(judge)}): {f.what}", f.error, f.raw)
                         for f in member_failures]
        keys = [ROW, *spec.items]
        first = outputs[0]
        if first.empty and all(o.empty for o in outputs):
            return first.drop(columns=[ROW], errors="ignore").assign(labels=[], tie=[]), failures
        by_member = [_labels_by_item(o, keys, spec.column) for o in outputs]
        items = list(dict.fromkeys(item for labels in by_member for item in labels))
        reference = {item: row for item, row in zip(_item_keys(first, keys), first.to_dict("records"))}
        index = {label: k for k, label in enumerate(spec.labels)}
        units = []
        for item in items:
            given = [labels.get(item) for labels in by_member]
            lacking = [k for k, g in enumerate(given) if _missing(g)]
            row = reference.get(item)
            if lacking or row is None:  # never combined from the others
                error = (f"no label from member(s) {', '.join(map(str, lacking or [0]))}; the others are not combined "
                         "without them")
                qid = str(row.get("qid", "")) if row is not None else ""
                units.append(Unit(qid, [(f"item {_describe(item, keys)}", Outcome(None, error))]))
                continue
            position, tie = consensus_label([index[g] for g in given], self.combine, self.ties)
            label = spec.labels[position]
            row = {**row, spec.column: label, **{column: values[label] for column, values in spec.derived.items()},
                   "labels": list(given), "tie": tie}
            units.append(Unit(str(row.get("qid", "")), [], [row]))
        rows, lacking_items = self.settle(units)
        columns = [c for c in first.columns if c != ROW] + ["labels", "tie"]
        return pd.DataFrame(rows, columns=columns + [ROW])[columns], failures + lacking_items


def _name(judge: LLMJudge) -> str:
    llm = judge.llm
    return str(getattr(llm, "model", llm)) if llm is not None else type(judge).__name__


def _item_keys(df: pd.DataFrame, keys: list[str]) -> list[tuple]:
    def norm(v):
        return None if isinstance(v, float) and v != v else v  # NaN (an uncited sentence's citation) is one key
    return [tuple(norm(v) for v in values) for values in zip(*(df[k] for k in keys))] if len(df) else []


def _labels_by_item(df: pd.DataFrame, keys: list[str], column: str) -> dict[tuple, object]:
    out: dict[tuple, object] = {}
    for item, label in zip(_item_keys(df, keys), df[column] if len(df) else []):
        if item in out:
            raise InvalidInput(f"ensemble: a member labelled item {item} twice; the items of its output are not "
                             f"identified by {keys}")
        out[item] = label
    return out


def _describe(item: tuple, keys: list[str]) -> str:
    return ", ".join(f"{'input row' if k == ROW else k} {v}" for k, v in zip(keys, item))
