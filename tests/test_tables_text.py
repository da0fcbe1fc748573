"""Tables and text a researcher publishes as they are: the LaTeX table compiles as it is, the correlate
table's columns line up, counts read as written ("1 topic"), iKAT tables count turns."""
import math
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from pyterrier_nuggets.evaluation import correlate
from pyterrier_nuggets.evaluation.table import JointTable
from pyterrier_nuggets.formats import LeaderboardRow, counted

ENGINES = [e for e in ("pdflatex", "lualatex", "tectonic") if shutil.which(e)]


def _table(names=("bm25 k1", "dense_k3 & co", "100%~best^2 #1"), baseline=True) -> JointTable:
    rows = [(s, f"q{q}", m, (i + 1) * 0.2 + q * 0.01 * (m == "V_strict"))
            for i, s in enumerate(names) for q in range(3) for m in ("nDCG@10", "V_strict")]
    per_query = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    means = per_query.pivot_table(index="system", columns="measure", values="value").loc[list(names)]
    pvalues = means * 0 + 0.01
    return JointTable(means=means, per_query=per_query, pvalues=pvalues, baseline=names[0] if baseline else None,
                      provenance={"nuggets": "ManualNuggets: hand-written, 50% vital {x}"},
                      compare_label="manual", comparison={"V_strict": 0.5}, compare_counts=(3, 3))


def _text_checks(tex: str, columns: int) -> None:
    """What a TeX engine would refuse or print wrongly, checked on the text."""
    body = [line for line in tex.splitlines() if not line.startswith("%")]
    text = "\n".join(body)
    assert r"\toprule" in text and r"\midrule" in text and r"\bottomrule" in text  # booktabs
    assert text.count("{") == text.count("}")
    for line in body:
        assert line.isascii(), line  # no character pdfLaTeX's default fonts lack (τ, †, ...)
        plain = line
        for good in (r"\textasciitilde{}", r"\textasciicircum{}", r"$^{\uparrow}$", r"$^{\downarrow}$"):
            plain = plain.replace(good, "")
        unescaped = re.findall(r"(?<!\\)[_#%&~^]", plain)
        if line.endswith(r"\\"):  # a row: its & are the column separators, columns - 1 of them
            assert line.count(" & ") == columns - 1 and unescaped.count("&") == columns - 1, line
            unescaped = [c for c in unescaped if c != "&"]
        assert not unescaped, line
        assert "<" not in line.replace("$<$", ""), line  # text-mode < prints ¡ in OT1
    cells = "\n".join(line for line in body if line.endswith(r"\\"))
    footnote = body[-1]
    if r"$^{\uparrow}$" in cells or r"$^{\downarrow}$" in cells:
        assert footnote.startswith(r"{\footnotesize ") and \
            r"$\uparrow$/$\downarrow$ = significantly higher/lower than" in footnote


def test_latex_table_text():
    table = _table()
    tex = table.to_latex()
    _text_checks(tex, columns=3)
    assert r"dense\_k3 \& co" in tex and r"100\%\textasciitilde{}best\textasciicircum{}2 \#1" in tex
    assert r"0.4100$^{\uparrow}$" in tex  # a marked cell, as many decimals as the Markdown
    # the best value of each column in bold (and marked), said in a comment; 3 decimals on request
    assert r"\textbf{0.6100}$^{\uparrow}$ & \textbf{0.6000}$^{\uparrow}$ \\" in tex
    assert "% bold: the best value of each column as shown, when one system has it (V_strict: highest, nDCG@10: " \
           "highest)" in tex
    assert r"\textbf{0.610}$^{\uparrow}$" in table.to_latex(digits=3)
    assert tex.count(r"\textbf") == 2
    assert "Means over 3 topics." in tex and r"Kendall's $\tau$-b" in tex  # the note, escaped, as a footnote
    assert tex.splitlines()[0].startswith(r"% needs \usepackage{booktabs}")
    _text_checks(_table(baseline=False).to_latex(), columns=3)


def test_markdown_and_latex_show_the_same_decimals():
    """The Markdown had 4 decimals and the LaTeX 3: the same table read two ways gave two numbers."""
    table = _table()
    markdown = table.to_markdown()
    tex = table.to_latex()
    for value in ("0.2100", "0.4100", "0.6100", "0.2000"):
        assert value in markdown and value in tex


def test_latex_bold_only_a_unique_best_and_directions():
    """Six systems sharing 1.000 were all bold: a tie for the best is bold nowhere (the comment says so)."""
    table = _table(names=("a", "b"))
    table.means.loc["b", "nDCG@10"] = table.means.loc["a", "nDCG@10"] + 0.00001  # equal as shown: a tie, no bold
    table.means["RubricFailedMandatory"] = [0.5, 0.25]  # less is better
    table.means["AnswerWords"] = [10.0, 90.0]  # no better direction: never bold
    table.pvalues = table.means * 0 + 0.5
    tex = table.to_latex("ikat")
    rows = [line for line in tex.splitlines() if line.endswith(r"\\") and not line.startswith("System")]
    assert rows == [r"a & 0.2100 & 0.2000 & 0.5000 & 10.0 \\",
                    r"b & \textbf{0.4100} & 0.2000 & \textbf{0.2500} & 90.0 \\"]
    assert r"\input{ikat.tex}" in tex.splitlines()[0]
    assert "RubricFailedMandatory: lowest" in tex and "nDCG@10: tied, none bold" in tex
    one = _table(names=("only",), baseline=False)
    assert r"\textbf" not in one.to_latex()  # one system: nothing is best


def test_significance_marks_say_the_direction_and_skip_answer_length():
    """† said 'different' without saying better or worse, and marked AnswerWords, which has no better direction."""
    from pyterrier_nuggets.evaluation import System
    from pyterrier_nuggets.evaluation.table import joint_table
    qrels = pd.DataFrame([(f"q{q}", f"q{q}:n0", 2) for q in range(8)], columns=["qid", "docno", "label"])
    systems = [System(name, pd.DataFrame(_rows(name), columns=["qid", "docno", "score"]))
               for name in ("base", "up", "down")]
    table = joint_table(systems, qrels, answer_measures=["V", "AnswerWords"], correction="holm")
    text = table.to_text()
    up, down = (next(line for line in text.splitlines() if line.startswith(n + " ")) for n in ("up", "down"))
    assert "↑" in up and "↓" not in up and "↓" in down and "↑" not in down
    assert math.isnan(table.pvalues.loc["up", "AnswerWords"]) and "↑" not in up.split()[-1]
    note = table.note()
    assert "↑/↓ = significantly higher/lower than base (paired t-test, p < 0.05, holm-corrected over the " \
           "table's 2 tests; AnswerWords: no test, it has no better direction)" in note, note
    assert table.to_latex().count(r"$^{\downarrow}$") == 1


def _rows(name):
    """Evaluation rows of one system: a nugget supported in proportion to its score, and the answer's length."""
    out = []
    for q in range(8):
        v = {"base": 0.5, "up": 1.0, "down": 0.0}[name] if q % 4 else {"base": 0.0, "up": 1.0, "down": 0.0}[name]
        words = {"base": 10, "up": 90, "down": 50}[name] + q
        out += [(f"q{q}", f"q{q}:n0", v), (f"q{q}", f"q{q}:words", float(words))]
    return out


def test_the_latex_note_has_no_text_mode_comparisons():
    """'support >= 0.63' in a judge's label became '$>$=' in the LaTeX note."""
    table = _table()
    table.compare_label = "a judge with support >= 0.63 and length <= 5"
    tex = table.to_latex()
    assert "$>$=" not in tex and "$<$=" not in tex
    assert r"support $\geq$ 0.63" in tex and r"length $\leq$ 5" in tex


@pytest.mark.skipif(not ENGINES, reason="no TeX engine (pdflatex, lualatex, tectonic) on this machine: "
                    "test_latex_table_text checks the text instead")
def test_latex_table_compiles(tmp_path):
    (tmp_path / "joint_table.tex").write_text(_table().to_latex(), encoding="utf-8")
    (tmp_path / "paper.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
                                        "\\begin{table}\\centering\\input{joint_table.tex}\\end{table}\n"
                                        "\\end{document}\n", encoding="utf-8")
    engine = ENGINES[0]
    cmd = [engine, "paper.tex"] if engine == "tectonic" else [engine, "-interaction=nonstopmode", "-halt-on-error",
                                                               "paper.tex"]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    assert (tmp_path / "paper.pdf").stat().st_size > 0


def test_counts_read_as_written():
    assert [counted(n, "topic") for n in (0, 1, 2)] == ["0 topics", "1 topic", "2 topics"]
    one = _table()
    one.per_query = one.per_query[one.per_query.qid == "q0"]
    assert "Means over 1 topic." in one.to_text()
    one.unit = "turn"
    assert "Means over 1 turn." in one.to_text()


def test_correlate_interval_columns_line_up():
    rng = np.random.default_rng(0)
    rows = [(f"s{i}", f"q{q}", "V_strict", rng.random()) for i in range(6) for q in range(8)]
    a = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    b = a.assign(value=a["value"] + rng.normal(0, 0.3, len(a)))
    text = correlate(a, b, "V_strict", n_resamples=200).to_text()
    lines = text.splitlines()
    header = lines[1]
    interval = next(line for line in lines if "CI (bootstrap" in line)
    cells = re.findall(r"\[[^]]+\]", interval)
    assert len(cells) == 3 and all(re.search(r"\s{2}" + re.escape(c), interval) for c in cells)  # never run together
    for name, cell in zip(("Kendall τ-b", "Spearman ρ", "τ_AP"), cells):  # right-aligned under their headers
        assert interval.index(cell) + len(cell) == header.index(name) + len(name)
    assert "8 topics in common" in lines[0] and "6 systems" in lines[0]


def test_correlate_given_jsonl_says_what_it_expects(tmp_path, capsys):
    from pyterrier_nuggets.cli import main
    jsonl = tmp_path / "nuggets.jsonl"
    jsonl.write_text('{"qid": "t1", "query": "q", "nuggets": [{"text": "a long nugget text", "importance": "vital"}]}\n')
    table = tmp_path / "t.csv"
    table.write_text("system,qid,measure,value\ns1,q1,V_strict,0.5\ns2,q1,V_strict,0.2\n")
    assert main(["correlate", str(jsonl), str(table), "--measure", "V_strict"]) == 2
    err = capsys.readouterr().err
    assert "nuggets.jsonl:1: is JSON, not a score table" in err and "system,qid,measure,value" in err
    assert "a long nugget text" not in err  # the first line is not shown as a header
    (tmp_path / "wide.csv").write_text("run,qid,x\nr,q,1\n")
    assert main(["correlate", str(tmp_path / "wide.csv"), str(table), "--measure", "V_strict"]) == 2
    assert "missing from the header line (run,qid,x)" in capsys.readouterr().err


def test_published_text_names_the_model_never_the_endpoint_address():
    from pyterrier_nuggets.evaluation import plots
    from pyterrier_nuggets.evaluation.arena import leaderboard
    from pyterrier_nuggets.records import Battle
    judge = "PairwiseJudge (naive prompt, one order, seed 0) on gpt-4o at http://10.1.2.3:18931/v1 + https://b.example/v1"
    table = _table()
    table.provenance = {"assignment": "AutoAssign: NuggetAssigner on gpt-4o at http://10.1.2.3:18931/v1"}
    battles = [Battle(f"q{i}", (a, b), a, b, "A" if i % 3 else "Tie", judge=judge)
               for i in range(3) for a, b in (("bm25 k1", "dense_k3 & co"), ("dense_k3 & co", "100%~best^2 #1"),
                                              ("bm25 k1", "100%~best^2 #1"))]
    arena = leaderboard(battles, resamples=0, prior=1.0)
    table.set_arena([LeaderboardRow(**r) for r in arena.leaderboard_rows()])
    published = [table.to_text(), table.to_markdown(), table.to_latex(), arena.to_text()]
    fig = plots.arena_figure(arena)
    published += [t.get_text() for t in (fig._suptitle, fig._supxlabel)]
    for text in published:
        assert "http" not in text and "10.1.2.3" not in text and "b.example" not in text, text
    assert "AutoAssign: NuggetAssigner on gpt-4o" in table.to_text() and "on gpt-4o" in published[-2]
    assert "http://10.1.2.3:18931/v1" in table.to_csv()  # the data file keeps where the judge ran


def test_table_command_tex_digits_and_its_own_name(tmp_path, capsys):
    from pyterrier_nuggets.cli import main
    qrels = tmp_path / "n.qrels"
    qrels.write_text("".join(f"q{i} 0 q{i}:n0 2\nq{i} 0 q{i}:n1 2\nq{i} 0 q{i}:n2 2\n" for i in range(3)))
    for name, k in (("a", 1), ("b", 2)):
        (tmp_path / f"{name}.run").write_text("".join(f"q{i} Q0 q{i}:n{j} {j + 1} 1 {name}\n"
                                                      for i in range(3) for j in range(k)))
    args = ["table", "--nugget-qrels", str(qrels), "--system", "a", str(tmp_path / "a.run"), "--system", "b",
            str(tmp_path / "b.run"), "--measures", "V_strict", "--label", "nuggets=hand-made"]
    assert main(args + ["--out", str(tmp_path / "three"), "--tex-digits", "3"]) == 0
    assert main(args + ["--out", str(tmp_path / "four"), "--tex-digits", "4"]) == 0
    capsys.readouterr()
    three, four = (tmp_path / "three.tex").read_text(), (tmp_path / "four.tex").read_text()
    assert r"\input{three.tex}" in three and r"\textbf{0.667}" in three and "0.333 " in three
    assert r"\textbf{0.6667}" in four and "0.3333 " in four
    assert main(args + ["--out", str(tmp_path / "default")]) == 0  # default: the Markdown's 4 decimals
    assert r"\textbf{0.6667}" in (tmp_path / "default.tex").read_text()
    with pytest.raises(SystemExit):  # refused where it is parsed
        main(args + ["--out", str(tmp_path / "x"), "--tex-digits", "0"])
    assert "must be 1 or more" in capsys.readouterr().err
