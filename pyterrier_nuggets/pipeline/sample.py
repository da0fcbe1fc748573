"""The small hand-made scoring sample (``pyterrier_nuggets/sample/rag_mini``, ``demo --sample-only``): two RAG
systems, their retrieved segments, answers, nugget assignments and support judgments made by hand.

:func:`run_sample` turns the sample's files into what the measures read (nugget qrels and one evaluation
run per system, written to the output directory) and returns the table of nDCG@10 and the answer scores.
"""
from __future__ import annotations

import os
from importlib import resources

from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import JointTable, System, joint_table

SAMPLE_DIR = str(resources.files("pyterrier_nuggets") / "sample" / "rag_mini")
SYSTEMS = ("bm25-rag", "dense-rag")


def export_system(sample_dir: str, name: str, out_dir: str) -> str:
    """Write the evaluation run of one sample system; returns its path."""
    assigned = formats.read_assignments(os.path.join(sample_dir, f"{name}.assignments.jsonl"))
    answers = formats.read_answers(os.path.join(sample_dir, f"{name}.answers.jsonl"))
    support = formats.read_support(os.path.join(sample_dir, f"{name}.support.jsonl"))
    path = os.path.join(out_dir, f"{name}.eval.run")
    formats.write_run(path, formats.evaluation_rows(assigned.answers, answers, support), name)
    return path


def run_sample(out_dir: str, sample_dir: str = SAMPLE_DIR) -> JointTable:
    """Score the hand-made sample (module docstring) and write its table.

    Writes the nugget qrels, one evaluation run per system and ``joint_table.*`` to ``out_dir``.

    :param out_dir: the folder of the outputs.
    :param sample_dir: a folder of the sample's form (default: the shipped ``rag_mini``).
    :returns: the joint table of nDCG@10 and the answer scores.
    """
    os.makedirs(out_dir, exist_ok=True)
    nuggets = formats.read_nuggets(os.path.join(sample_dir, "nuggets.jsonl"))
    nugget_qrels = os.path.join(out_dir, "nuggets.qrels")
    formats.write_nugget_qrels(nugget_qrels, nuggets)
    systems = [System(name, export_system(sample_dir, name, out_dir),
                      os.path.join(sample_dir, f"{name}.segments.run")) for name in SYSTEMS]
    table = joint_table(systems, nugget_qrels, os.path.join(sample_dir, "segments.qrels"))
    table.write(os.path.join(out_dir, "joint_table"))
    return table
