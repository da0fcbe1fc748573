"""Stage-overlapped runs: a chain of LLM judges without barriers between its stages.

Run as a plain PyTerrier pipeline, ``NuggetCreator(llm) >> NuggetScorer(llm)`` creates the nuggets of
every topic before it scores any: each stage ends with a tail in which few requests are in flight.
:class:`Overlapped` runs the same chain topic by topic instead: a topic's importance scoring starts as
soon as its nuggets exist, its assignments (:meth:`Overlapped.assign`) as soon as it has importance
labels, and all topics share the LLM client's one pool of workers (:mod:`pyterrier_nuggets.llm.scheduler`),
earlier stages and earlier topics first. The judges are the same objects: their results are identical to
the staged run's (same rows, same order, same columns), their failure policies apply once all topics ran
(a topic whose stage failed under ``on_failure="raise"`` goes no further), and their ``failures`` hold
the failures of all topics.

:func:`run_together` runs independent judges at once on the same inputs' pool (e.g. the nugget assignment
and the support judgments of the same answers), their failure policies applied afterwards in order.

Every stage must treat topics independently (all judges of this package do; a transformer that is not
an :class:`~.base.LLMJudge` is applied to each topic's rows). In Batch API mode and in a dry run all
stages must share one LLM client.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.judges.base import LLMJudge
from pyterrier_nuggets.judges.failures import RAISE, Failure, FailurePolicy
from pyterrier_nuggets.judges.nuggets import NuggetAssigner
from pyterrier_nuggets.judges.parallel import TopicParallel

ROW = "_overlap_row"  # input position carried through the stages, to restore the staged run's row order
ANSWER_ROW = "_overlap_answer"


def _stages(pipeline) -> list[pt.Transformer]:
    """The stages of a ``>>`` chain (nested chains flattened), or ``[pipeline]``."""
    if isinstance(pipeline, (list, tuple)):
        return [s for p in pipeline for s in _stages(p)]
    if type(pipeline).__name__ == "Compose":
        return [s for p in pt.inspect.subtransformers(pipeline)["transformers"] for s in _stages(p)]
    return [pipeline]


def _concat(frames: list[pd.DataFrame | None]) -> pd.DataFrame | None:
    """The topics' frames as one (in topic order), in the staged run's row order, without helper columns."""
    present = [f for f in frames if f is not None]
    if not present:
        return None
    rows = [f for f in present if len(f)]
    out = pd.concat(rows, ignore_index=True) if rows else present[0]
    for column in (ROW, ANSWER_ROW):
        if column in out.columns:
            out = out.sort_values(column, kind="stable").drop(columns=[column])
    return out.reset_index(drop=True)


MAX_DRIVERS = 256  # topic threads of one Overlapped run, at most (each mostly waits for its requests)


class Overlapped(TopicParallel):
    """A chain of judges run topic by topic with no barrier between stages; see the module docstring.

    The output is that of the chain run as a plain pipeline (same rows, order and columns); :meth:`assign` also
    assigns the nuggets to answers as soon as each topic's are scored.

    :param pipeline: the chain, e.g. ``NuggetCreator(llm) >> NuggetScorer(llm)``.
    :param max_topics: bounds the topics in progress at once, one waiting thread each (default: four times the
        largest concurrency of the judges' clients, at most :data:`MAX_DRIVERS`: a topic's stage has one request
        or a few in flight, so four per slot keep the client's pool full while the threads stay few).

    Examples::

        from pyterrier_nuggets import LLMClient, NuggetAssigner, NuggetCreator, NuggetScorer, Overlapped

        llm = LLMClient()
        chain = Overlapped(NuggetCreator(llm) >> NuggetScorer(llm))
        nuggets, assigned = chain.assign(judged, answers, NuggetAssigner(None, llm))
    """

    def __init__(self, pipeline, *, max_topics: int | None = None):
        self.pipeline = pipeline
        self.max_topics = max_topics
        self.stages = _stages(pipeline)

    def __repr__(self) -> str:
        return f"Overlapped({' >> '.join(repr(s) for s in self.stages)})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        return self._run(inp)[0]

    def assign(self, inp: pd.DataFrame, answers: pd.DataFrame, assigner: NuggetAssigner
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The chain's nuggets and their assignment to ``answers``: ``(nuggets, assigned)``, identical to
        ``nuggets = chain(inp); assigned = NuggetAssigner(nuggets, ...)(answers)``. ``assigner`` gives the
        settings (its own nuggets, e.g. ``NuggetAssigner(None, llm)``, are not used); its ``failures``
        hold the assignment failures afterwards. Each topic's answers are assigned as soon as its
        nuggets are scored."""
        pt.validate.columns(answers, includes=["qid", "qanswer"], context=assigner)
        return self._run(inp, answers, assigner)

    # ------------------------------------------------------------------------------------ the run

    def _run(self, inp: pd.DataFrame, answers: pd.DataFrame | None = None, assigner: NuggetAssigner | None = None
             ) -> tuple[pd.DataFrame, pd.DataFrame | None]:
        pt.validate.columns(inp, includes=["qid"], context=self)
        if inp.empty:  # no LLM work: the staged chain gives the right empty frames
            nuggets = self.pipeline(inp) if not isinstance(self.pipeline, (list, tuple)) else inp
            assigned = assigner.with_nuggets(nuggets)(answers) if assigner is not None else None
            return nuggets, assigned
        stages = self.stages + ([assigner] if assigner is not None else [])
        clients = list({id(c): c for c in (s.client() for s in stages if isinstance(s, LLMJudge))}.values())
        if len(clients) > 1 and any(c.mode != "online" for c in clients):
            raise InvalidInput("Overlapped in Batch API mode or in a dry run needs one LLM client for all stages")
        frame = inp.assign(**{ROW: range(len(inp))})
        topics = [(str(qid), group) for qid, group in frame.groupby("qid", sort=False)]
        by_topic: dict[str, pd.DataFrame] = {}
        if answers is not None:
            tagged = answers.assign(**{ANSWER_ROW: range(len(answers))})
            by_topic = {str(qid): g for qid, g in tagged.groupby("qid", sort=False)}
        bound = self.max_topics or min(MAX_DRIVERS, 4 * max((c.concurrency for c in clients), default=8))
        run = _TopicRun(stages, assigner, clients, topics, by_topic)
        run.drive_all(min(len(topics), bound))
        results = []
        for i, stage in enumerate(stages):
            out = _concat(run.outputs[i])
            if out is None:  # only the assigner: no topic has both nuggets and answers
                out = assigner.with_nuggets(results[-1]).run(answers.iloc[:0])[0]
            if isinstance(stage, LLMJudge):
                out = stage.complete(out, [f for topic in run.failures[i] for f in topic])
            results.append(out)
        if assigner is not None:
            return results[-2], results[-1]
        return results[-1], None


class _TopicRun:
    """The topics of one :class:`Overlapped` run, driven through all stages by a few threads (one topic each at a
    time): each stage's output and failures per topic, and the first error of any thread."""

    def __init__(self, stages: list, assigner: NuggetAssigner | None, clients: list, topics: list, by_topic: dict):
        self.stages, self.assigner, self.clients, self.by_topic = stages, assigner, clients, by_topic
        self.schedulers = [c.scheduler for c in clients]
        self.outputs: list[list] = [[None] * len(topics) for _ in stages]
        self.failures: list[list[list[Failure]]] = [[[] for _ in topics] for _ in stages]
        self.errors: list[BaseException] = []
        self.queue = list(enumerate(topics))
        self.lock = threading.Lock()
        from tqdm.auto import tqdm
        self.bar = tqdm(total=len(topics), desc=f"{type(stages[0]).__name__} >> ... overlapped", unit="topic",
                        leave=False, disable=not any(c.progress and c.mode != "plan" for c in clients) or len(topics) < 2)

    def drive(self, index: int, qid: str, topic_frame: pd.DataFrame) -> None:
        """One topic through every stage, each as soon as the one before it is done."""
        current = topic_frame
        for i, stage in enumerate(self.stages):
            with _priorities(self.schedulers, (i, index)):
                if stage is self.assigner:
                    if current is None or current.empty or qid not in self.by_topic:
                        return
                    out, failed = self.assigner.with_nuggets(current).run(self.by_topic[qid])
                elif isinstance(stage, LLMJudge):
                    out, failed = stage.run(current)
                else:
                    out, failed = stage.transform(current), []
            self.outputs[i][index], self.failures[i][index] = out, failed
            if failed and isinstance(stage, FailurePolicy) and stage.on_failure == RAISE:
                return  # the staged run would stop here: later stages are not asked for this topic
            current = out

    def driver(self) -> None:
        """A thread's work: topics from the queue until it is empty or a topic raised."""
        with contextlib.ExitStack() as stack:
            for c in self.clients:
                stack.enter_context(c.scheduler.driving(registered=True))
                stack.enter_context(c.quiet())  # one bar for the whole run instead of one per topic
            while True:
                with self.lock:
                    if not self.queue or self.errors:
                        return
                    index, (qid, topic_frame) = self.queue.pop(0)
                try:
                    self.drive(index, qid, topic_frame)
                except BaseException as exc:  # raised in the caller once every driver stopped
                    with self.lock:
                        self.errors.append(exc)
                    return
                self.bar.update()

    def drive_all(self, threads: int) -> None:
        for s in self.schedulers:
            s.expect_drivers(threads)
        workers = [threading.Thread(target=self.driver, name=f"pt-nuggets-topic-{i}", daemon=True)
                   for i in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        self.bar.close()
        if self.errors:
            raise self.errors[0]


@contextlib.contextmanager
def _priorities(schedulers, priority: tuple) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for s in schedulers:
            stack.enter_context(s.priority(priority))
        yield


def run_together(steps: list[tuple[LLMJudge, pd.DataFrame]]) -> list[pd.DataFrame]:
    """``[judge(frame) for judge, frame in steps]`` with the judges' LLM work at once.

    Each judge's :meth:`~.base.LLMJudge.run` runs in a thread of its own on the shared client pool (earlier steps
    first), then each one's failure policy in order, in the caller's thread. The outputs are those of the
    sequential calls; the errors too, except that a step after one that raises has already made its calls (and
    cached them). Judges with different clients in Batch API mode or a dry run run one after the other.

    :param steps: ``(judge, input frame)`` pairs.
    :returns: each judge's output, in order.
    """
    clients = list({id(c): c for c in (judge.client() for judge, _ in steps)}.values())
    if len(steps) < 2 or (len(clients) > 1 and any(c.mode != "online" for c in clients)):
        return [judge(frame) for judge, frame in steps]
    schedulers = [c.scheduler for c in clients]
    results: list = [None] * len(steps)
    errors: list[BaseException] = []

    def drive(index: int) -> None:
        judge, frame = steps[index]
        try:
            with contextlib.ExitStack() as stack:
                for s in schedulers:
                    stack.enter_context(s.driving(registered=True))
                with _priorities(schedulers, (index,)):
                    results[index] = judge.run(frame)
        except BaseException as exc:  # raised in the caller once both stopped
            errors.append(exc)

    for s in schedulers:
        s.expect_drivers(len(steps))
    threads = [threading.Thread(target=drive, args=(i,), name=f"pt-nuggets-step-{i}", daemon=True)
               for i in range(len(steps))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [judge.complete(*result) for (judge, _), result in zip(steps, results)]
