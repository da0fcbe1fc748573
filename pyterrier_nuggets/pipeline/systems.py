"""The systems of the main job, as the command line names them: ``[NAME=]RETRIEVER:K[:GENERATOR]`` and files
that replace a step (``--run``, ``--answers``, ``--assignments``)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ir_measures_ext.errors import InvalidInput

RETRIEVERS = ("bm25", "dense")
DEFAULT_K = 5  # segments given to the generator when a system (bm25, --run) names no K
GENERATORS = ("extractive", "llm")
# the default systems per judging mode of the main job (``--llm``): offline, BM25 and dense at three depths with
# the extractive baseline generator, and one system whose answers the embedded SmolLM2 model writes (abstractive
# answers whose citations can fail, next to extractive ones that copy what they cite); with an LLM endpoint the
# six retrieval systems, answers by that LLM; with the embedded model only two (it takes ~10 s per call on CPU)
DEFAULT_SYSTEMS = {
    "offline": ("bm25:1", "bm25:3", "bm25:5", "dense:1", "dense:3", "dense:5", "bm25-k3-smollm2=bm25:3:llm"),
    "endpoint": ("bm25:1", "bm25:3", "bm25:5", "dense:1", "dense:3", "dense:5"),
    "embedded": ("bm25:5", "dense:5"),
}


@dataclass
class SystemSpec:
    """One system of the main job.

    ``run``, ``answers`` and ``assignments`` are files that replace the matching step.

    :param name: the system's name (a row of the table).
    :param retriever: ``bm25``, ``dense`` or None (then ``run`` must give the retrieved segments, or ``answers`` /
        ``assignments`` the answers).
    :param k: segments given to the generator.
    :param run: a TREC run of retrieved segments.
    :param answers: an answer file.
    :param assignments: an assignment file.
    :param generator: ``extractive`` (the baseline without an LLM), ``llm`` (the cited generator on the job's LLM)
        or None (the job's default: extractive offline, else llm).
    """

    name: str
    retriever: str | None = None
    k: int = DEFAULT_K
    run: str | None = None
    answers: str | None = None
    assignments: str | None = None
    generator: str | None = None

    @property
    def assignment_source(self) -> str:
        return "imported" if self.assignments else "LLM"


def parse_system(spec: str) -> SystemSpec:
    """A system from ``RETRIEVER:K[:GENERATOR]`` or ``NAME=RETRIEVER:K[:GENERATOR]``.

    The name defaults to ``RETRIEVER-kK`` (plus ``-GENERATOR`` when given).

    :param spec: e.g. ``bm25:5``, ``dense:10:extractive``, ``bm25-k3=bm25:3:llm``.
    """
    name, _, rest = spec.rpartition("=")
    retriever, _, k = rest.partition(":")
    k, _, generator = k.partition(":")
    if generator and generator not in GENERATORS:
        raise InvalidInput(f"system {spec!r}: generator must be one of {GENERATORS}")
    if retriever not in RETRIEVERS:
        raise InvalidInput(f"system {spec!r}: retriever must be one of {RETRIEVERS} (imported runs: --run NAME=PATH)")
    try:
        k = int(k) if k else DEFAULT_K
    except ValueError:
        raise InvalidInput(f"system {spec!r}: K must be a number of segments, e.g. bm25:5") from None
    from pyterrier_nuggets.judges.generation import check_reference_count
    check_reference_count(k, f"system {spec!r}: K")
    default_name = f"{retriever}-k{k}" + (f"-{generator}" if generator else "")
    return SystemSpec(name or default_name, retriever, k, generator=generator or None)


def parse_named_path(value: str, option: str) -> tuple[str, str]:
    """``NAME=PATH`` of ``--run``, ``--answers`` and ``--assignments``."""
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise InvalidInput(f"{option} takes NAME=PATH, got {value!r}")
    return name, path


def build_systems(specs: Sequence[str] = (), runs: Sequence[str] = (), answers: Sequence[str] = (),
                  assignments: Sequence[str] = (), k: int | None = None, mode: str = "offline") -> list[SystemSpec]:
    """Systems from the command line: ``specs`` plus one per name of ``runs``, ``answers``, ``assignments``.

    Files of one name make one system. With none of them, the defaults of the judging ``mode``
    (:data:`DEFAULT_SYSTEMS`).

    :param specs: ``--system`` values (:func:`parse_system`).
    :param runs: ``--run`` values, ``NAME=PATH``.
    :param answers: ``--answers`` values, ``NAME=PATH``.
    :param assignments: ``--assignments`` values, ``NAME=PATH``.
    :param k: segments given to the generator of a ``--run`` system (default :data:`DEFAULT_K`).
    :param mode: ``"offline"``, ``"endpoint"`` or ``"embedded"``: whose default systems.
    """
    if k is not None:
        from pyterrier_nuggets.judges.generation import check_reference_count
        check_reference_count(k, "-k")  # refused before any work, not when the first answer is generated
    systems: dict[str, SystemSpec] = {}
    for spec in specs:
        s = parse_system(spec)
        if s.name in systems:
            raise InvalidInput(f"two systems are named {s.name!r}; name them: NAME=RETRIEVER:K")
        systems[s.name] = s
    for option, values, attr in (("--run", runs, "run"), ("--answers", answers, "answers"),
                                 ("--assignments", assignments, "assignments")):
        for value in values:
            name, path = parse_named_path(value, option)
            s = systems.setdefault(name, SystemSpec(name, None, DEFAULT_K if k is None else k))
            if getattr(s, attr):
                raise InvalidInput(f"{option}: system {name!r} was given twice")
            setattr(s, attr, path)
    if not systems:
        systems = {s.name: s for s in map(parse_system, DEFAULT_SYSTEMS[mode])}
    for s in systems.values():
        if s.retriever is None and not (s.run or s.answers or s.assignments):
            raise InvalidInput(f"system {s.name!r} has nothing to evaluate")
    return list(systems.values())
