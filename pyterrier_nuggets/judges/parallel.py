"""PyTerrier's ``.parallel()`` for the package's transformers: the topics split over worker processes (joblib) or
a Ray cluster, with the serial run's results and failure reports (docs/scale.md).

``judge.parallel(2, "ray")`` on any judge, generator, matching step or baseline judge of the package (they are
:class:`~.failures.FailurePolicy` steps), and on :class:`~.overlap.Overlapped` and
:class:`~pyterrier_nuggets.evaluation.RAGEvaluation` (all :class:`TopicParallel`), gives a :class:`ParallelByTopic`;
any other transformer can be wrapped directly (``ParallelByTopic(transformer, 2)``). PyTerrier's own ``.parallel()`` (pyterrier-alpha's
``PoolParallelTransformer``) runs the workers through the same joblib and Ray back-ends
(``pyterrier_alpha.parallel.parallel_lambda``), but it returns the topics sorted by qid with the workers'
indexes, and each worker applies its steps' failure policies to its own topics only. Here:

- the input's topics, in the order they first appear, are cut into ``n_jobs`` contiguous groups of about equal
  rows; each group runs in one worker; the outputs are put together in group order with a fresh index: the
  serial run's rows, order and columns (tested for every family of transformer). One exception, at float32
  precision: a local encoder's vectors (``EmbeddingMatcher``, ``NLIMatcher``) differ by about 1e-7 with the texts
  encoded in the same batch, so a cosine or probability (``match_score``) may differ in its last digits, as it
  does in a serial run given another input; a decision differs only if its score lies that close to the threshold
  (none of the 9,560 of the CONE-RAG sample did; docs/benchmarks.md);
- the transformer travels by pickling: an :class:`~pyterrier_nuggets.llm.LLMClient` as its configuration (one
  client per configuration and worker process, its cache by ``worker_cache``), a matcher without its loaded
  model (loaded again in the worker on first use);
- every failure-policy step inside (judges, matchers' steps) reports once, in the calling process, for the
  whole input: the workers' failure warnings are held back and their failures collected, then each step's policy
  is applied to all of them in the pipeline's order (a ``"raise"`` raises :class:`~.failures.LLMStepError` with the
  failures of every worker; its ``failures`` attribute holds them all). A worker whose step raised stops there,
  as the serial run would; the other workers go on with their topics (their calls are cached: a re-run pays
  nothing twice). Any other error in a worker (an endpoint that cannot be used) is handed back the same way and
  raised by the calling process once every worker is done: the pool is never torn down under its workers (which
  left their semaphores behind);
- the workers' LLM counts are added to the calling process's clients (``llm.usage()``); other warnings are shown
  once;
- on this machine (``"joblib"``) the workers are joblib's process pool set up by :mod:`.workers`: a worker dies with
  the process that started it (``kill -9`` of a command leaves no worker calling the endpoint), and Ctrl-C stops the
  workers as it stops one process (no new request, those in flight waited for and cached), then interrupts the
  caller. Ray's workers are Ray's.

A dry run or Batch API mode needs every request in one process: such a client refuses to be pickled.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterator

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.judges.failures import FailurePolicy, FailureWarning, LLMStepError
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.usage import cause_difference

BACKENDS = ("joblib", "ray")


class TopicParallel(pt.Transformer):
    """A transformer whose rows of a topic depend on that topic's input rows only, so that its ``.parallel()`` is
    :class:`ParallelByTopic`: every judge, matching step and baseline judge of the package,
    :class:`~.overlap.Overlapped` and :class:`~pyterrier_nuggets.evaluation.RAGEvaluation`."""

    def parallel(self, N: int, backend: str = "joblib") -> pt.Transformer:
        """This transformer on ``N`` workers (``"joblib"`` processes or a ``"ray"`` cluster), a group of topics each,
        with the serial run's output and one failure report for the whole input (:class:`ParallelByTopic`).

        :param N: workers at once.
        :param backend: ``"joblib"`` or ``"ray"`` (after ``ray.init()``).
        """
        return ParallelByTopic(self, N, backend)


class ParallelByTopic(pt.Transformer):
    """``transformer`` run on ``n_jobs`` workers, a group of topics each; see the module docstring.

    :param transformer: any transformer whose rows of a topic depend on that topic's input rows only (every
        transformer of this package).
    :param n_jobs: worker processes (joblib) or Ray tasks at once.
    :param backend: ``"joblib"`` (processes on this machine) or ``"ray"`` (a Ray cluster: call ``ray.init()``
        first).

    Examples::

        from pyterrier_nuggets import NuggetAssigner, ParallelByTopic

        assigned = NuggetAssigner(nuggets, llm).parallel(2, "joblib")(answers)
        matched = ParallelByTopic(my_transformer, 4, "ray")(frame)
    """

    def __init__(self, transformer: pt.Transformer, n_jobs: int, backend: str = "joblib"):
        if backend not in BACKENDS:
            raise InvalidInput(f"backend must be one of {BACKENDS}, got {backend!r}")
        if int(n_jobs) < 1:
            raise InvalidInput(f"n_jobs must be at least 1, got {n_jobs}")
        if backend == "ray":
            import ray
            if not ray.is_initialized():
                raise InvalidInput("backend 'ray' needs a Ray cluster: call ray.init() first (ray.init(num_cpus=N) "
                                   "starts one on this machine)")
        self.transformer = transformer
        self.n_jobs = int(n_jobs)
        self.backend = backend

    def __repr__(self) -> str:
        return f"ParallelByTopic({self.transformer!r}, {self.n_jobs}, {self.backend!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid"], context=self)
        groups = topic_groups(inp, self.n_jobs)
        if len(groups) < 2:  # one topic (or none): nothing to split
            return self.transformer(inp)
        tasks = [(self.transformer, g) for g in groups]
        if self.backend == "joblib":  # processes that die with this one and stop as it does on Ctrl-C
            from pyterrier_nuggets.judges import workers
            results = workers.run(_work, tasks, len(groups))
        else:
            from pyterrier_alpha.parallel import parallel_lambda
            results = parallel_lambda(_work, tasks, len(groups), self.backend)
        steps = list(failure_steps(self.transformer))
        for client, result, tested, causes in zip(llm_clients(self.transformer), zip(*(r.counts for r in results)),
                                                  zip(*(r.tested for r in results)), zip(*(r.causes for r in results))):
            for counts in result:
                client.counters.merge(counts)
            for by_stage in causes:  # why the workers' failed items failed (a stage's stop shows it)
                client.counters.merge_causes(by_stage)
            client.test_endpoint = client.test_endpoint or any(tested)  # tables say who answered
        broken = [r.error for r in results if r.error is not None and not isinstance(r.error, LLMStepError)]
        if broken:  # an endpoint that cannot be used, a bad input: raised as the serial run raises it
            raise broken[0]
        shown = set()
        for r in results:
            for message, category in r.warnings:
                if (message, category) not in shown:
                    shown.add((message, category))
                    warnings.warn(message, category, stacklevel=2)
        for i, step in enumerate(steps):  # each step's policy once, on the failures of every worker, in order
            step.finish([f for r in results for f in r.failures[i]])
        stopped = [r.error for r in results if r.error is not None]
        if stopped:  # a worker's step raised, but its policy here did not: not expected; never lose the error
            raise stopped[0]
        return pd.concat([r.output for r in results], ignore_index=True)


class _Result:
    """What a worker sends back: its output (None when a step raised), each step's failures, the LLM counts of
    each client and why their failed items failed, whether the package's test endpoint answered it, the warnings other
    than failure reports, and the error it stopped with (a step's failure error, or any other: raised by the calling
    process)."""

    __slots__ = ("output", "failures", "counts", "tested", "warnings", "error", "causes")

    def __init__(self, output, failures, counts, tested, caught, error, causes):
        self.output, self.failures, self.counts, self.warnings, self.error = output, failures, counts, caught, error
        self.tested, self.causes = tested, causes


def _work(task: tuple[pt.Transformer, pd.DataFrame]) -> _Result:
    """One worker's group of topics: the transformer applied, its steps' failures and its clients' counts."""
    transformer, frame = task
    steps = list(failure_steps(transformer))
    clients = list(llm_clients(transformer))
    before = [c.counters.snapshot() for c in clients]
    causes_before = [c.counters.cause_snapshot() for c in clients]
    error = output = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            output = transformer(frame)
        except Exception as e:  # raised by the calling process once every worker is done (see transform)
            error = e
    counts = [_difference(c.counters.snapshot(), b) for c, b in zip(clients, before)]
    causes = [cause_difference(c.counters.cause_snapshot(), b) for c, b in zip(clients, causes_before)]
    others = [(str(w.message), w.category) for w in caught if not issubclass(w.category, FailureWarning)]
    return _Result(output, [list(s.failures) for s in steps], counts, [c.test_endpoint for c in clients], others,
                   error, causes)


def _difference(after: dict[str, dict], before: dict[str, dict]) -> dict[str, dict]:
    return {stage: {k: v - before.get(stage, {}).get(k, 0) for k, v in counts.items()}
            for stage, counts in after.items()}


def topic_groups(frame: pd.DataFrame, n: int) -> list[pd.DataFrame]:
    """``frame`` cut into at most ``n`` groups of whole topics, contiguous in the order the topics first appear,
    of about equal numbers of rows.

    :param frame: a frame with a ``qid`` column.
    :param n: the most groups.
    """
    positions: dict = {}
    for i, qid in enumerate(frame["qid"]):
        positions.setdefault(qid, []).append(i)
    topics = list(positions.values())
    n = max(1, min(n, len(topics)))
    target = len(frame) / n
    groups: list[list[int]] = [[]]
    done = 0
    for rows in topics:
        if groups[-1] and len(groups) < n and done + len(rows) / 2 > target * len(groups):
            groups.append([])
        groups[-1].extend(rows)
        done += len(rows)
    return [frame.iloc[sorted(g)] for g in groups if g]


def _parts(obj, seen: set[int]) -> Iterator:
    """The objects of this package (and transformers) inside ``obj``, depth first in attribute order, each before
    ``obj`` itself (a step that contains steps reports after them, as it finishes after them)."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, LLMClient):
        yield obj
        return
    if isinstance(obj, (list, tuple)):
        children = list(obj)
    elif isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, pt.Transformer) or type(obj).__module__.startswith("pyterrier_nuggets"):
        children = list(getattr(obj, "__dict__", {}).values())
    else:
        children = []
    for child in children:
        yield from _parts(child, seen)
    yield obj


def failure_steps(transformer) -> Iterator[FailurePolicy]:
    """The failure-policy steps inside ``transformer`` (itself included), in pipeline order.

    :param transformer: any transformer.
    """
    return (p for p in _parts(transformer, set()) if isinstance(p, FailurePolicy))


def llm_clients(transformer) -> Iterator[LLMClient]:
    """The LLM clients inside ``transformer``, each once, in the order they are found.

    :param transformer: any transformer.
    """
    return (p for p in _parts(transformer, set()) if isinstance(p, LLMClient))
