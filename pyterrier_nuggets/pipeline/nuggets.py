"""Where a main job's nuggets come from, the main job's strategy beside who judges (:mod:`.judges`): the evaluation
conditions of [nugget-recall §4.3] are a choice of nugget source x assignment source.

- :class:`AutoNuggets`: created from the judged segments by the LLM (``NuggetCreator >> NuggetScorer``,
  [nugget-recall §4.1.1]; :func:`create_nuggets`).
- :class:`ManualNuggets`: the collection's own hand-written nuggets (the offline default).
- :class:`NuggetFile`: a nugget file given by the user (post-edited, manual, another run's).
- :class:`AssignmentNuggets`: the nuggets of an imported assignment file.

:func:`nugget_source` is the main job's rule when none is given.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import pandas as pd

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import formats
from pyterrier_nuggets.docstore import fetch_texts
from pyterrier_nuggets.judges import NuggetCreator, NuggetScorer, Overlapped
from pyterrier_nuggets.judges.failures import EXCLUDE
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.pipeline.collections import Collection
from pyterrier_nuggets.pipeline.judges import Judges, need_llm
from pyterrier_nuggets.pipeline.systems import SystemSpec

EMBEDDED_MAX_NUGGETS = 10  # the embedded model fills every list to the limit: keep its runs short


@dataclass
class JobNuggets:
    """The nuggets a job scores the answers against.

    :param frame: the nugget frame of the collection's topics.
    :param nugget_set: the same nuggets as records.
    :param kind: ``"auto"``, ``"manual"`` or ``"imported"`` (:attr:`NuggetSource.kind`).
    :param path: the file they were read from (None: created).
    :param notes: what a reader of the table must know about them (failures, dropped labels).
    :param failed: topic -> the step that failed on it (its nugget list is incomplete).
    """

    frame: pd.DataFrame
    nugget_set: formats.NuggetSet
    kind: str
    path: str | None = None
    notes: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def topic_nuggets(nugget_set: formats.NuggetSet, topics: pd.DataFrame) -> pd.DataFrame:
    """The nugget frame of the collection's topics (queries from the nugget file, else from the topics).

    :param nugget_set: the nuggets.
    :param topics: the collection's topics (``qid, query``).
    """
    frame = formats.nuggets_to_frame(nugget_set, dict(zip(topics["qid"], topics["query"])) | nugget_set.queries)
    return frame[frame["qid"].isin(topics["qid"])].reset_index(drop=True)


def create_nuggets(collection: Collection, llm: LLMClient, *, on_failure: str = EXCLUDE, max_nuggets: int = 30,
                   keep: int | None = 20) -> JobNuggets:
    """AutoNuggets ([nugget-recall §4.1.1]): nuggets from the segments judged >= 1, scored vital/okay.

    The segments are read most relevant first; creation and scoring run topic by topic
    (:class:`~pyterrier_nuggets.judges.overlap.Overlapped`).

    :param collection: the collection (its qrels and docstore).
    :param llm: the client.
    :param on_failure: ``"exclude"`` (default: failed windows and batches are left out, and in ``notes`` and
        ``failed``) or ``"raise"``.
    :param max_nuggets: nuggets created per topic at most (30 in the paper).
    :param keep: nuggets kept per topic after scoring (20 in the paper; ``None``: all).
    :returns: the nuggets, the notes on their failures and the topics whose nugget list is incomplete (a failed
        creation window or scoring batch) with the step that failed.

    Examples::

        from pyterrier_nuggets.pipeline import create_nuggets, sample_collection

        created = create_nuggets(sample_collection(), llm)
        print(created.frame, created.notes)
    """
    judged = collection.qrels[collection.qrels["label"] >= 1]
    judged = judged.merge(collection.topics, on="qid")
    texts = fetch_texts(collection.docstore, judged["docno"].tolist())
    judged = judged.assign(text=judged["docno"].map(texts))
    # the most relevant segments first: they start the running nugget list
    judged = judged.sort_values(["qid", "label"], ascending=[True, False], kind="stable")
    creator = NuggetCreator(llm, max_nuggets=max_nuggets, on_failure=on_failure)
    scorer = NuggetScorer(llm, keep=keep, on_failure=on_failure)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failures are summarised in ``notes``
        # topic by topic, a topic's scoring as soon as its nuggets exist (results identical to creator >> scorer)
        frame = Overlapped(creator >> scorer)(judged[["qid", "query", "docno", "text", "label"]])
    created = JobNuggets(frame, formats.frame_to_nuggets(frame) if len(frame) else formats.NuggetSet([]), "auto")
    created.failed.update(scorer.failed_topics())
    created.failed.update(creator.failed_topics())
    if creator.failures:
        created.notes.append(f"nugget creation: {len(creator.failures)} failed window(s) of "
                             f"{len({f.qid for f in creator.failures})} topic(s)")
    if scorer.failures:
        created.notes.append(f"nugget scoring: {len(scorer.failures)} nugget batch(es) without importance, left out")
    return created


class NuggetSource:
    """Where a main job's nuggets come from (see the module docstring): :meth:`nuggets` gives them, :meth:`describe`
    names them in the table, ``kind`` and ``condition`` name the [nugget-recall §4.3] condition, ``needs_llm`` says
    whether making them asks an LLM."""

    kind: ClassVar[str] = "imported"
    needs_llm: ClassVar[bool] = False
    option: ClassVar[str | None] = None  # the option that gives the file, when the user gives it (an input)
    path: str | None = None

    @property
    def condition(self) -> str:
        """The nugget half of the [nugget-recall §4.3] condition."""
        return {"auto": "AutoNuggets", "manual": "ManualNuggets"}.get(self.kind, "imported nuggets")

    def nuggets(self, collection: Collection, judges: Judges, on_invalid: str,
                log: Callable[[str], None]) -> JobNuggets:
        """The nuggets of ``collection``'s topics.

        :param collection: the collection.
        :param judges: who judges (their client and failure policy, for nuggets an LLM makes).
        :param on_invalid: a nugget file's invalid labels: ``"refuse"`` or ``"drop"`` (reported in the notes).
        :param log: receives the progress line.
        """
        raise NotImplementedError

    def describe(self, llm: LLMClient | None) -> str:
        """How the table names the nuggets.

        :param llm: the job's client.
        """
        return f"imported: {formats.shown_path(self.path)}"


@dataclass
class NuggetFile(NuggetSource):
    """Nuggets read from a nugget file (nugget JSONL: post-edited, manual, another run's).

    :param path: the nugget file.
    """

    path: str
    label: ClassVar[str] = "imported"  # in the log
    option: ClassVar[str | None] = "--nuggets"

    def nuggets(self, collection: Collection, judges: Judges, on_invalid: str,
                log: Callable[[str], None]) -> JobNuggets:
        nugget_set = formats.read_nuggets(self.path, on_invalid=on_invalid)
        read = JobNuggets(topic_nuggets(nugget_set, collection.topics), nugget_set, self.kind, self.path)
        if nugget_set.invalid:
            read.notes.append(f"{formats.shown_path(self.path)}: dropped {nugget_set.invalid.summary().splitlines()[0]}")
        log(f"nuggets: {self.label}: {formats.shown_path(self.path)}")
        return read


@dataclass
class ManualNuggets(NuggetFile):
    """The hand-written nuggets (vital/okay) that come with the collection (``Collection.nuggets``: the shipped
    sample has them); the offline default.

    :param path: their nugget file.
    """

    kind: ClassVar[str] = "manual"
    label: ClassVar[str] = "hand-written with the collection"
    option: ClassVar[str | None] = None  # the collection's own

    def describe(self, llm: LLMClient | None) -> str:
        return f"ManualNuggets: hand-written (vital/okay) with the collection, {formats.shown_path(self.path)}"

    @classmethod
    def of(cls, collection: Collection) -> ManualNuggets:
        """The collection's own; a collection without any is refused (the offline judges create none).

        :param collection: the collection.
        """
        if collection.nuggets is None:
            raise InvalidInput(f"the offline judges need nuggets, and {collection.name} has none of its own: give "
                               "--nuggets PATH (a nugget JSONL), or an LLM endpoint (--base-url/--model) for "
                               "AutoNuggets")
        return cls(collection.nuggets)


@dataclass
class AssignmentNuggets(NuggetSource):
    """The nuggets of an imported assignment file (nuggetizer assign JSONL), those every imported assignment file
    must have been made with.

    :param path: the assignment file.
    """

    path: str

    def nuggets(self, collection: Collection, judges: Judges, on_invalid: str,
                log: Callable[[str], None]) -> JobNuggets:
        nugget_set = formats.read_assignments(self.path, on_invalid=on_invalid).nugget_set()
        log(f"nuggets: those of {self.path}")
        return JobNuggets(topic_nuggets(nugget_set, collection.topics), nugget_set, self.kind, self.path)


@dataclass
class AutoNuggets(NuggetSource):
    """AutoNuggets: created from the collection's judged segments by the judges' LLM (:func:`create_nuggets`,
    [nugget-recall §4.1.1]).

    :param max_nuggets: nuggets created per topic (default 30, at most 20 kept, as in [nugget-recall]; with the
        embedded model 10, all kept).
    """

    max_nuggets: int | None = None
    kind: ClassVar[str] = "auto"
    needs_llm: ClassVar[bool] = True

    def nuggets(self, collection: Collection, judges: Judges, on_invalid: str,
                log: Callable[[str], None]) -> JobNuggets:
        log("nuggets: creating them from the judged segments (NuggetCreator >> NuggetScorer)")
        llm = need_llm(judges.llm)
        most = self.max_nuggets
        if most is None:
            most = EMBEDDED_MAX_NUGGETS if llm.embedded else 30
        return create_nuggets(collection, llm, on_failure=judges.on_failure, max_nuggets=most, keep=min(20, most))

    def describe(self, llm: LLMClient | None) -> str:
        return f"AutoNuggets: NuggetCreator >> NuggetScorer ([nugget-recall §4.1]) on {need_llm(llm).describe()}"


def nugget_source(nuggets: NuggetSource | str | None, judges: Judges, systems: Sequence[SystemSpec],
                  collection: Collection, max_nuggets: int | None = None) -> NuggetSource:
    """The main job's nugget source: the one given (a :class:`NuggetSource`, or a nugget file's path), else the
    nuggets of the first imported assignment file, else AutoNuggets (judges that create nuggets: the LLM judges),
    else the collection's hand-written ones (the offline judges; refused when it has none).

    :param nuggets: the source given, a nugget file's path, or None.
    :param judges: who judges.
    :param systems: the systems (those with imported assignments bring their nuggets).
    :param collection: the collection (its own nuggets).
    :param max_nuggets: AutoNuggets' nuggets per topic (:class:`AutoNuggets`).
    """
    if isinstance(nuggets, NuggetSource):
        return nuggets
    if nuggets:
        return NuggetFile(nuggets)
    imported = [s.assignments for s in systems if s.assignments]
    if imported:
        return AssignmentNuggets(imported[0])
    return AutoNuggets(max_nuggets) if judges.creates_nuggets else ManualNuggets.of(collection)
