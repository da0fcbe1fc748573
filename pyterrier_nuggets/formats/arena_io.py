"""Arena files (TREC RAG 2026 pairwise battles; docs/arena.md, docs/formats.md): battles, leaderboards and
pairwise win counts, in the shapes of the track's toolkit (castorini/RAGDoll, design decision 11), so that a
file of either can be read by the other.

- battles JSONL (``battles.jsonl``; the toolkit's ``judgments.jsonl``; a file of human verdicts): one battle a
  line, ``{"task_id", "qid", "query", "pair": [run, run], "assistant_a_run_id", "assistant_b_run_id",
  "judge_verdict": "A"|"B"|"Tie"|null, "preferred_run_id", "status": "completed"|"failed", "error",
  "raw_output"}``; we add ``judge`` (who judged), and for battles judged in both orders ``verdicts`` (the two
  replies) and ``orders_agree``. A human verdict file needs only ``qid``, ``assistant_a_run_id``,
  ``assistant_b_run_id`` and ``judge_verdict``. ``[[A]]``-style verdicts and the toolkit's ``Tie (bothbad)`` and
  ``Tie (Both Bad)`` (its spelling since July 2026; both a tie) are read too.
- ``leaderboard.csv``: ``rank, run_id, arena_score, n_judgments, wins, losses, ties`` (the toolkit's columns, in
  its order), then ours: the bootstrap intervals ``ci_low_battles, ci_high_battles, ci_low_topics,
  ci_high_topics``, their ``confidence``, the ``prior`` of the fit and the ``judge``.
- ``pairwise.csv``: ``run_a, run_b, shared_topics, valid_judgments, run_a_wins, run_b_wins, ties,
  run_a_preference_rate, run_b_preference_rate`` (a tie counts half in a preference rate).
"""
from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass

from ir_measures_ext import ids
from pyterrier_nuggets.formats.files import InputError, atomic_write, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.records import Battle

STATUSES = ("completed", "failed")
LEADERBOARD_COLUMNS = ["rank", "run_id", "arena_score", "n_judgments", "wins", "losses", "ties"]
LEADERBOARD_EXTRA = ["ci_low_battles", "ci_high_battles", "ci_low_topics", "ci_high_topics", "confidence", "prior",
                     "judge", "position_bias_p"]
PAIRWISE_COLUMNS = ["run_a", "run_b", "shared_topics", "valid_judgments", "run_a_wins", "run_b_wins", "ties",
                    "run_a_preference_rate", "run_b_preference_rate"]


def parse_verdict_label(value: str) -> str | None:
    """A verdict as files write it (``A``, ``[[A]]``, ``Tie``, ``Tie (bothbad)``, ``Tie (Both Bad)``, ...) ->
    ``A``/``B``/``Tie``;
    None when it is none of them."""
    text = value.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2].strip()
    if ids.is_tie(text):
        return ids.BATTLE_TIE
    return text if text in (ids.BATTLE_A, ids.BATTLE_B) else None


def _run(path: str, line: int, obj: dict, key: str) -> str:
    value = get_field(path, line, obj, key, str)
    if not value.strip():
        raise InputError(path, line, key, "empty")
    return value


def battle_from_json(path: str, line: int, obj: dict) -> Battle:
    """One line of a battle file as a record (every field checked; errors name file, line and field).

    :param path: the file, for the errors.
    :param line: the line number, for the errors.
    :param obj: the line's JSON object.
    """
    qid = get_qid(path, line, obj, "qid", "topic_id")
    a, b = _run(path, line, obj, "assistant_a_run_id"), _run(path, line, obj, "assistant_b_run_id")
    if a == b:
        raise InputError(path, line, "assistant_b_run_id", f"the same system as in position A ({a!r})")
    pair = obj.get("pair", [a, b])
    if not isinstance(pair, list) or sorted(map(str, pair)) != sorted([a, b]):
        raise InputError(path, line, "pair", f"{pair!r:.80} is not the two systems shown ({a!r}, {b!r})")
    status = obj.get("status", "completed")
    if status not in STATUSES:
        raise InputError(path, line, "status", f"{status!r:.40} is none of {STATUSES}")
    given = obj.get("judge_verdict")
    verdict = None
    if status == "completed":
        if not isinstance(given, str) or parse_verdict_label(given) is None:
            raise InputError(path, line, "judge_verdict", f"{given!r:.40} is not a verdict",
                             "write A, B or Tie (the track's [[A]], [[B]], [[Tie]] are read too)")
        verdict = parse_verdict_label(given)
    preferred = obj.get("preferred_run_id")
    winner = {ids.BATTLE_A: a, ids.BATTLE_B: b}.get(verdict or "")
    if verdict is not None and preferred is not None and preferred != winner:
        raise InputError(path, line, "preferred_run_id", f"{preferred!r:.40} contradicts the verdict {given!r} "
                         f"(which prefers {winner or 'neither: a tie'})")
    verdicts = obj.get("verdicts", [])
    if not isinstance(verdicts, list) or len(verdicts) not in (0, 2) or any(
            not isinstance(v, str) or parse_verdict_label(v) is None for v in verdicts):
        raise InputError(path, line, "verdicts", f"{verdicts!r:.60}: expected the two verdicts of a battle judged "
                         "in both orders")
    raw = obj.get("raw_outputs", [obj["raw_output"]] if isinstance(obj.get("raw_output"), str) else [])
    judge = obj.get("judge", obj.get("model")) or ""
    known = {"task_id", "qid", "topic_id", "query", "pair", "assistant_a_run_id", "assistant_b_run_id",
             "judge_verdict", "preferred_run_id", "status", "error", "raw_output", "raw_outputs", "judge",
             "verdicts", "orders_agree"}
    return Battle(qid, (str(pair[0]), str(pair[1])), a, b, verdict, str(judge),
                  tuple(parse_verdict_label(v) for v in verdicts),
                  None if verdict is not None else str(obj.get("error") or "failed"),
                  tuple(str(r) for r in raw if isinstance(r, str)), str(obj.get("query") or ""),
                  {k: v for k, v in obj.items() if k not in known})


def read_battles(path: str) -> list[Battle]:
    """Read a battle file (ours, the toolkit's ``judgments.jsonl``, or human verdicts; see the module docstring).
    A battle (topic and two systems, in either order) given twice is refused, except a failed one followed by
    its completed retry (the toolkit appends retries): the later one counts. Failed battles are returned with
    ``verdict=None``; they count nowhere.

    :param path: the battle file (JSONL)."""
    battles: list[Battle] = []
    where: dict[tuple, tuple[int, int]] = {}
    for line, obj in read_jsonl(path):
        battle = battle_from_json(path, line, obj)
        if battle.key in where:
            first_line, index = where[battle.key]
            if battles[index].ok or not battle.ok:
                raise InputError(path, line, "qid", f"the battle of {battle.pair[0]} and {battle.pair[1]} on topic "
                                 f"{battle.qid} is already at line {first_line}",
                                 "one verdict per battle; give each judge (or assessor) a file of their own")
            battles[index] = battle
            where[battle.key] = (line, index)
            continue
        where[battle.key] = (line, len(battles))
        battles.append(battle)
    if not battles:
        raise InputError(path, None, None, "no battles")
    return battles


def is_battle_file(path: str) -> bool:
    """Whether ``path`` is a battle file: JSONL whose first object has a ``judge_verdict``."""
    import json
    try:
        with open(path, encoding="utf-8-sig") as f:
            first = next((line for line in f if line.strip()), "")
        obj = json.loads(first) if first.lstrip().startswith("{") else None
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(obj, dict) and "judge_verdict" in obj


def battle_json(b: Battle) -> dict:
    """A battle as a line of ``battles.jsonl`` (the toolkit's judgment row, plus ``judge`` and, for both orders,
    ``verdicts`` and ``orders_agree``).

    :param b: the battle."""
    first, second = b.pair
    row = {"task_id": f"arena:{first}:{second}:{b.qid}", "qid": b.qid, "query": b.query, "pair": [first, second],
           "assistant_a_run_id": b.assistant_a, "assistant_b_run_id": b.assistant_b, "judge_verdict": b.verdict,
           "preferred_run_id": b.winner, "judge": b.judge, "status": "completed" if b.ok else "failed",
           "error": b.error, "raw_output": b.raw[-1] if b.raw else None}
    if len(b.raw) > 1:
        row["raw_outputs"] = list(b.raw)
    if b.verdicts:
        row["verdicts"] = list(b.verdicts)
        row["orders_agree"] = b.orders_agree
    row.update(b.extra)
    return row


def write_battles(path: str, battles: Iterable[Battle]) -> None:
    """Write battles as ``battles.jsonl`` (one :func:`battle_json` line each), atomically.

    :param path: the output file.
    :param battles: the battles.
    """
    write_jsonl(path, (battle_json(b) for b in battles))


@dataclass(frozen=True)
class LeaderboardRow:
    """One system of a leaderboard file; the intervals are NaN where the file has none.

    :param run_id: the system.
    :param rank: its place, 1 first.
    :param arena_score: its rating on the Elo-like scale (1000 centre, 400 per base-10 log-odds).
    :param n_judgments: the battles it fought.
    :param wins: battles won.
    :param losses: battles lost.
    :param ties: battles tied.
    :param ci_low_battles: lower bound of the bootstrap interval over battles.
    :param ci_high_battles: its upper bound.
    :param ci_low_topics: lower bound of the interval over topics (cluster-robust, the topics as clusters).
    :param ci_high_topics: its upper bound.
    :param confidence: the confidence of the intervals (e.g. 0.95).
    :param prior: the virtual ties between pairs that met (0: the plain maximum-likelihood fit).
    :param judge: who judged the battles.
    :param position_bias_p: the p-value of the judge's position bias when it is significant and the ratings carry it
        (battles judged in one order); NaN otherwise.
    """

    run_id: str
    rank: int
    arena_score: float
    n_judgments: int
    wins: int
    losses: int
    ties: int
    ci_low_battles: float = math.nan
    ci_high_battles: float = math.nan
    ci_low_topics: float = math.nan
    ci_high_topics: float = math.nan
    confidence: float = math.nan
    prior: float = 0.0
    judge: str = ""
    position_bias_p: float = math.nan


def _number(path: str, line: int, name: str, text: str, *, finite: bool = True, integer: bool = False,
            empty_ok: bool = False) -> float:
    if empty_ok and text.strip() in ("", "nan", "NaN"):
        return math.nan
    try:
        value = float(text)
    except ValueError:
        raise InputError(path, line, name, f"{text!r} is not a number") from None
    if (finite and not math.isfinite(value)) or math.isnan(value) or (integer and not value.is_integer()) \
            or (integer and value < 0):
        raise InputError(path, line, name, f"{text!r} is not a {'count' if integer else 'finite number'}")
    return value


def read_leaderboard(path: str) -> list[LeaderboardRow]:
    """Read a ``leaderboard.csv`` (ours, or the toolkit's without the intervals): one row per system, each named
    once, every number checked (intervals may be empty or ±inf: a bound the battles do not fix).

    :param path: the CSV file."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        missing = [c for c in ("run_id", "arena_score") if c not in header]
        if missing:
            raise InputError(path, 1, missing[0], f"missing from the header {header}",
                             "a leaderboard has the columns " + ", ".join(LEADERBOARD_COLUMNS))
        rows, seen = [], {}
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            line = reader.line_num
            if len(row) != len(header):
                raise InputError(path, line, None, f"{len(row)} fields, the header has {len(header)}")
            rec = dict(zip(header, (c.strip() for c in row)))
            run = rec["run_id"]
            if not run:
                raise InputError(path, line, "run_id", "empty")
            if run in seen:
                raise InputError(path, line, "run_id", f"{run} is already at line {seen[run]}")
            seen[run] = line
            counts = {k: int(_number(path, line, k, rec[k], integer=True)) if rec.get(k, "") != "" else 0
                      for k in ("n_judgments", "wins", "losses", "ties")}
            cis = {k: _number(path, line, k, rec[k], finite=False, empty_ok=True)
                   for k in LEADERBOARD_EXTRA[:5] if k in rec}
            rows.append(LeaderboardRow(run, int(_number(path, line, "rank", rec["rank"], integer=True))
                                       if rec.get("rank") else len(rows) + 1,
                                       _number(path, line, "arena_score", rec["arena_score"]), **counts, **cis,
                                       prior=_number(path, line, "prior", rec["prior"]) if rec.get("prior") else 0.0,
                                       judge=rec.get("judge", ""),
                                       position_bias_p=_number(path, line, "position_bias_p", rec["position_bias_p"],
                                                               empty_ok=True) if "position_bias_p" in rec else math.nan))
    if not rows:
        raise InputError(path, None, None, "no systems, only a header")
    return rows


def _cell(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else ("inf" if value == math.inf else "-inf" if value == -math.inf
                                            else f"{value:.10g}")
    return str(value)


def write_csv(path: str, columns: list[str], rows: Iterable[dict]) -> None:
    """A CSV of ``rows`` (dicts) in ``columns`` order; floats with 10 significant digits, NaN empty, ±inf as
    ``inf``/``-inf`` (atomically)."""
    with atomic_write(path) as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row.get(c, "")) for c in columns])
