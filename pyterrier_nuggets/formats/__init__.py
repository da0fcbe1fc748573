"""Readers and writers of every file format the package reads or writes, and their DataFrame forms: one
module per format family, every name also available here (``formats.read_nuggets``, ...).

- :mod:`.nugget_io`: nugget files (nuggetizer "create" JSONL, TREC RAG 2025 nuggets) and nugget qrels.
- :mod:`.assignment_io`: assignment files (nuggetizer "assign" JSONL).
- :mod:`.answer_io`: TREC RAG 2024 / 2025 / 2026 answer files and a track's answer rules.
- :mod:`.support_io`: support judgment JSONL, and the TREC RAG 2026 toolkit's support assignments.
- :mod:`.arena_io`: battle files (ours, the TREC RAG 2026 toolkit's judgments, human verdicts), leaderboards,
  pairwise win counts.
- :mod:`.rubric_io`: rubric files (ResearchRubrics, the TREC RAG 2026 toolkit's rubrics), rubric qrels, verdicts.
- :mod:`.cone_io`: CONE-RAG resource files (gold nuggets, responses, response nuggets, crowd labels), extracted-nugget
  JSONL, labelled-pair JSONL (for ``calibrate``).
- :mod:`.ikat_io`: the official TREC iKAT 2024 run format (passage ranking + responses with provenance).
- :mod:`.text_io`: topic TSV and document JSONL (texts of topics and of segments or documents).
- :mod:`.trec_io`: TREC runs and qrels, the rows of an evaluation run (decisions.md, decision 1).
- :mod:`.shard_io`: the manifest ``shard.json`` of a finished ``--shard I/N`` run, and the split of the topics into
  shards (read by ``merge`` and the report; ``formats.shard_io.NAME``).
- :mod:`.judging_io`: the judging manifest ``judging.json`` (who judged each measure of a folder, on which nuggets and
  rubric, what was dropped or failed; written by ``trec-rag``, read by the report; ``formats.judging_io.NAME``).
- :mod:`.frames`: the DataFrame forms and every frame <-> record conversion.
- :mod:`.checks`: files checked against each other (support judgments ↔ answers ↔ assignments ↔ nuggets ↔
  run tag).
- :mod:`.files`: what they share (errors naming file, line and field; invalid-label policies; JSONL and JSON
  documents, read by :mod:`datasets_ext.reading` for the datasets and the package alike; atomic writes; the one
  rule of tab-separated files, ``files.TSV_RULE``, with their one writer and reader).

Every reader names file, line and field in its errors. Invalid labels (real files contain importance
"failed" and free-text assignment labels) are counted per topic and handled by an explicit policy:
``on_invalid="refuse"`` (default) raises :class:`InvalidLabelsError` with the counts; ``"drop"`` removes
those nuggets from their topic and says so in a warning and in the returned report. Nothing is ever
counted as another label. Writers are atomic: a file is complete or absent. Nothing here imports
pyterrier or openai (decisions.md, decision 6).
"""
from pyterrier_nuggets.formats.answer_io import (
    TREC_RAG_2026,
    AnswerRules,
    RepeatedCitationWarning,
    answer_2024_json,
    answer_2025_json,
    answer_sentences,
    read_answers,
    rule_problems,
    write_answers_2024,
    write_answers_2025,
    write_answers_2026,
)
from pyterrier_nuggets.formats.arena_io import (
    LeaderboardRow,
    battle_from_json,
    battle_json,
    read_battles,
    read_leaderboard,
    write_battles,
)
from pyterrier_nuggets.formats.assignment_io import AssignedAnswer, AssignmentSet, read_assignments, write_assignments
from pyterrier_nuggets.formats.checks import (
    check_assignment_nuggets,
    check_assignments_answers,
    check_response_nuggets,
    check_support,
    one_run,
)
from pyterrier_nuggets.formats.cone_io import (
    LabelledPair,
    ResponseNuggets,
    read_cone_crowd_labels,
    read_cone_gold_nuggets,
    read_cone_response_nuggets,
    read_cone_responses,
    read_extracted_nuggets,
    read_labelled_pairs,
    same_response,
    write_cone_gold_nuggets,
    write_cone_response_nuggets,
    write_cone_responses,
    write_extracted_nuggets,
    write_labelled_pairs,
)
from pyterrier_nuggets.formats.files import (
    POLICIES,
    InputError,
    InvalidLabel,
    InvalidLabelReport,
    InvalidLabelsError,
    atomic_write,
    check_outputs,
    check_run_tag,
    check_topic_id,
    counted,
    load_json,
    read_jsonl,
    read_lines,
    run_tag_problem,
    shown_label,
    shown_path,
    write_all,
    write_jsonl,
)
from pyterrier_nuggets.formats.frames import (
    ANSWER_COLUMNS,
    ASSIGNMENT_COLUMNS,
    BATTLE_COLUMNS,
    NUGGET_COLUMNS,
    SUPPORT_COLUMNS,
    VERDICT_COLUMNS,
    answers_to_frame,
    as_nugget_set,
    assigned_answers_to_frame,
    assignment_frame_to_answers,
    frame_to_answers,
    frame_to_battles,
    frame_to_judgments,
    frame_to_nuggets,
    frame_to_relations,
    frame_to_verdicts,
    judgments_to_frame,
    nugget_qrels,
    nuggets_to_frame,
    qrels_frame,
    run_frame,
    write_support_frame,
)
from pyterrier_nuggets.formats.ikat_io import (
    Decision,
    IkatRun,
    TurnMatches,
    ikat_answers,
    ikat_ranking,
    ikat_run_from_frames,
    parse_ikat_run,
    read_ikat_matches,
    read_ikat_run,
    read_ptkb_run,
    write_ikat_matches,
    write_ikat_run,
)
from pyterrier_nuggets.formats.nugget_io import (
    NuggetSet,
    read_nugget_qrels,
    read_nuggets,
    sub_narrative_qrels,
    sub_narratives,
    write_nugget_qrels,
    write_nuggets,
)
from pyterrier_nuggets.formats.rubric_io import (
    RubricCriterion,
    RubricSet,
    RubricVerdict,
    nuggets_to_rubrics,
    read_rubric_verdicts,
    read_rubrics,
    rubric_qrels_rows,
    rubric_rows,
    write_rubric_qrels,
    write_rubric_verdicts,
    write_rubrics,
)
from pyterrier_nuggets.formats.support_io import (
    read_relations,
    read_support,
    read_support_assignment_answers,
    read_support_assignments,
    support_assignment_rows,
    write_relations,
    write_support,
    write_support_assignments,
)
from pyterrier_nuggets.formats.text_io import read_docs, read_topics_tsv
from pyterrier_nuggets.formats.trec_io import (
    Row,
    assignment_rows,
    evaluation_rows,
    read_assignment_run,
    read_qrels_rows,
    read_run_rows,
    support_rows,
    words_rows,
    write_assignment_run,
    write_qrels,
    write_run,
)

__all__ = [
    "IkatRun", "ikat_answers", "ikat_ranking", "ikat_run_from_frames", "parse_ikat_run", "read_ikat_run", "read_ptkb_run", "write_ikat_run", "Decision", "TurnMatches", "read_ikat_matches", "write_ikat_matches",
    "InputError", "InvalidLabel", "InvalidLabelReport", "InvalidLabelsError", "POLICIES",
    "read_lines", "read_jsonl", "load_json", "write_jsonl", "counted", "shown_label", "shown_path", "atomic_write", "check_outputs", "write_all", "check_topic_id",
    "check_run_tag", "run_tag_problem",
    "one_run", "check_support", "check_assignments_answers", "check_assignment_nuggets", "check_response_nuggets",
    "NuggetSet", "read_nuggets", "write_nuggets", "write_nugget_qrels", "read_nugget_qrels", "sub_narratives",
    "sub_narrative_qrels",
    "AssignedAnswer", "AssignmentSet", "read_assignments", "write_assignments",
    "read_answers", "write_answers_2024", "write_answers_2025", "write_answers_2026", "answer_2024_json",
    "answer_2025_json", "AnswerRules", "TREC_RAG_2026", "rule_problems", "RepeatedCitationWarning",
    "answer_sentences", "read_support", "write_support", "read_support_assignments", "read_support_assignment_answers",
    "support_assignment_rows",
    "write_support_assignments", "read_relations", "write_relations",
    "Row", "assignment_rows", "words_rows", "support_rows", "evaluation_rows", "write_run", "write_qrels",
    "write_assignment_run", "read_assignment_run", "read_run_rows", "read_qrels_rows",
    "NUGGET_COLUMNS", "ANSWER_COLUMNS", "ASSIGNMENT_COLUMNS", "SUPPORT_COLUMNS", "nuggets_to_frame",
    "frame_to_nuggets", "as_nugget_set", "nugget_qrels", "answers_to_frame", "frame_to_answers",
    "assignment_frame_to_answers", "assigned_answers_to_frame", "frame_to_judgments", "frame_to_relations",
    "judgments_to_frame",
    "write_support_frame", "qrels_frame", "run_frame",
    "ResponseNuggets", "read_cone_gold_nuggets", "write_cone_gold_nuggets", "read_cone_responses",
    "write_cone_responses", "read_cone_response_nuggets", "write_cone_response_nuggets", "read_extracted_nuggets",
    "write_extracted_nuggets",
    "RubricCriterion", "RubricSet", "RubricVerdict", "read_rubrics", "write_rubrics", "rubric_qrels_rows",
    "write_rubric_qrels", "nuggets_to_rubrics", "read_rubric_verdicts", "write_rubric_verdicts", "rubric_rows",
    "VERDICT_COLUMNS", "frame_to_verdicts", "read_topics_tsv", "read_docs",
    "read_cone_crowd_labels", "LabelledPair", "read_labelled_pairs", "write_labelled_pairs", "same_response",
    "read_battles", "write_battles", "battle_json", "battle_from_json", "read_leaderboard", "LeaderboardRow",
    "BATTLE_COLUMNS", "frame_to_battles",
]
