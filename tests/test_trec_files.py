"""TREC qrels and runs read alike by every route (ir_measures_ext/trec_files.py): a UTF-8 byte order mark is read by
the plain ir_measures command line as by ours (for our measures and ir_measures' own), and qrels and run given the
wrong way round are named in one line."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QRELS = "t1 0 t1:n0 2\nt1 0 t1:n1 1\nt1 0 d1 1\nt2 0 t2:n0 2\nt2 0 d2 2\n"
RUN = "t1 Q0 t1:n0 1 1.0 r\nt1 Q0 t1:n1 2 0.5 r\nt1 Q0 d1 3 -1 r\nt2 Q0 t2:n0 1 0.0 r\nt2 Q0 d9 2 -1 r\n"


def _ir_measures(*argv) -> subprocess.CompletedProcess:
    """The plain ir_measures command line, as a user runs it (the start-up hook loads our measures)."""
    return subprocess.run([sys.executable, "-m", "ir_measures", *argv], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def _scores(out: str) -> dict[str, float]:
    return {line.split("\t")[0]: float(line.split("\t")[1]) for line in out.splitlines() if "\t" in line}


@pytest.mark.parametrize("where", ["qrels", "run", "both"])
def test_a_byte_order_mark_is_read_by_every_measure(where, tmp_path):
    plain = (tmp_path / "q.txt", tmp_path / "r.txt")
    plain[0].write_text(QRELS)
    plain[1].write_text(RUN)
    bom = (tmp_path / "qb.txt", tmp_path / "rb.txt")
    bom[0].write_bytes((b"\xef\xbb\xbf" if where in ("qrels", "both") else b"") + QRELS.encode())
    bom[1].write_bytes((b"\xef\xbb\xbf" if where in ("run", "both") else b"") + RUN.encode())
    measures = ["V_strict", "A", "nDCG@10", "P@1"]
    expected = _ir_measures(*map(str, plain), *measures)
    got = _ir_measures(*map(str, bom), *measures)
    assert expected.returncode == got.returncode == 0, got.stderr
    assert _scores(got.stdout) == _scores(expected.stdout) and len(_scores(got.stdout)) == 4
    assert _scores(expected.stdout)["nDCG@10"] > 0


@pytest.mark.parametrize("measure", ["V_strict", "nDCG@10"])
def test_qrels_and_run_swapped_are_named_in_one_line(measure, tmp_path):
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "r.txt").write_text(RUN)
    done = _ir_measures(str(tmp_path / "r.txt"), str(tmp_path / "q.txt"), measure)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"ir_measures: error: {tmp_path / 'r.txt'} line 1: 6 columns where the qrels go; "
                                  "it has the 6 columns of a run file: the qrels and the run seem swapped")


def test_a_missing_qrels_file_keeps_what_ir_measures_prints(tmp_path):
    """ir_measures' own message for what it checks itself (a missing qrels file: neither a file nor a dataset id)."""
    (tmp_path / "r.txt").write_text(RUN)
    done = _ir_measures(str(tmp_path / "missing.txt"), str(tmp_path / "r.txt"), "V_strict")
    assert done.returncode == 255 and done.stderr == f"{tmp_path / 'missing.txt'} not found. (checked file and ir_datasets)\n"
