"""One command line: every command that calls an LLM takes the same LLM option group (names, defaults, help); no
option is read from an abbreviation; every message names options of the command that prints it; a dry run needs no
endpoint; an empty input file is one line, never a bug's exit 3; --version and the help describe the tool."""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_nuggets import __version__, cli
from pyterrier_nuggets.cli.options import LLM_COMMANDS, LLM_GROUP, add_endpoint_options, add_llm_options

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "pyterrier_nuggets" / "cli"


def subparsers(parser=None) -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its name (``annotate init``, ``cache merge`` for the nested ones)."""
    out = {}
    todo = [("", parser or cli.build_parser())]
    while todo:
        prefix, p = todo.pop()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out[(prefix + " " + name).strip()] = sub
                    todo.append(((prefix + " " + name).strip(), sub))
    return out


def options(parser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings}


def group_actions(add) -> dict[str, argparse.Action]:
    p = argparse.ArgumentParser()
    add(p)
    return {o: a for a in p._actions for o in a.option_strings if o not in ("-h", "--help")}


GROUP = group_actions(add_llm_options)


@pytest.mark.parametrize("command", LLM_COMMANDS)
def test_every_llm_command_takes_the_whole_llm_group_alike(command):
    parser = subparsers()[command]
    have = options(parser)
    for option, action in GROUP.items():
        assert option in have, f"{command} has no {option}"
        mine = have[option]
        assert (mine.dest, mine.default, mine.help, mine.choices, mine.type, mine.nargs, mine.metavar) == \
            (action.dest, action.default, action.help, action.choices, action.type, action.nargs, action.metavar), \
            f"{command} {option} differs from the LLM group"
    titles = [g.title for g in parser._action_groups]
    assert titles.count(LLM_GROUP) == 1


def test_the_llm_commands_are_every_command_that_asks_an_llm():
    """A command whose module makes an LLM client (or judges with one) is in LLM_COMMANDS; check-endpoint asks one
    tiny question and takes the endpoint part of the group."""
    makers = re.compile(r"\bllm_client\(|\bLLMClient\(")
    asking = {p.stem.replace("_", "-") for p in CLI.glob("*.py") if makers.search(p.read_text(encoding="utf-8"))}
    assert asking - {"options", "check-endpoint"} <= set(LLM_COMMANDS)
    endpoint = group_actions(lambda p: add_endpoint_options(p))
    have = options(subparsers()["check-endpoint"])
    for option, action in endpoint.items():
        assert have[option].help == action.help and have[option].default == action.default, option


def test_no_option_is_read_from_an_abbreviation(capsys):
    for name, parser in {"pyterrier-nuggets": cli.build_parser(), **subparsers()}.items():
        assert parser.allow_abbrev is False, name
    args = cli.build_parser().parse_args(["trec-rag", "--answers", "a.jsonl", "--out", "o", "--llm", "embedded"])
    assert args.llm == "embedded" and args.llm_cache is None  # not --llm-cache embedded
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["trec-rag", "--answers", "a.jsonl", "--out", "o", "--llm-cach", "c.sqlite"])
    assert "unrecognized arguments: --llm-cach" in capsys.readouterr().err


def test_version_and_a_help_that_describes_the_tool():
    done = subprocess.run([sys.executable, "-c", "import sys; from pyterrier_nuggets.cli import main; sys.exit(main())",
                           "--version"], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"pyterrier-nuggets {__version__}"
    text = cli.build_parser().format_help()
    assert "Evaluate retrieval-augmented generation" in text and "one module per subcommand" not in text
    for name in ("trec-rag", "arena", "demo", "test-endpoint"):
        assert name in text


def test_each_commands_verbose_help_names_the_command():
    for name, parser in subparsers().items():
        if " " in name or name not in cli.MODEL_COMMANDS:  # -v is on the commands that load a model only
            continue
        verbose = options(parser)["-v"].help
        assert f"pyterrier-nuggets {name} -v" in verbose, name


# ------------------------------------------------------------------------------------ messages name own options

SHARDED = ("demo", "trec-rag", "ikat", "arena")
# modules whose messages every one of these commands may print
SHARED = {"options": LLM_COMMANDS, "shards": SHARDED, "paths": ("demo", "trec-rag", "ikat", "arena", "merge")}
SHARED_PACKAGES = {"llm": LLM_COMMANDS, "judges": LLM_COMMANDS}
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _strings(path: Path) -> list[str]:
    """The user-facing strings of a module: every string constant and f-string, docstrings and comments left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            out.append(node.value)
    return out


def _allowed(text: str, printers, parsers, nested: bool) -> set[str]:
    """The options a message may name: those of every command that prints it (of any of its subcommands for a
    command with subcommands), and of any command it names."""
    named = [c for c in parsers if " " not in c and re.search(rf"(?<![\w-]){re.escape(c)}(?![\w-])", text)]
    sets = [set(options(parsers[c])) for c in printers]
    allowed = set.union(*sets) if nested else set.intersection(*sets)
    for c in named:
        allowed |= set(options(parsers[c]))
        allowed |= {o for sub, p in parsers.items() if sub.startswith(c + " ") for o in options(p)}
    return allowed


def _printers(path: Path, parsers) -> tuple[tuple, bool]:
    """The commands that may print the messages of module ``path``, and whether they are one command and its
    subcommands (any of whose options a message may name)."""
    if path.parent.name == "cli":
        name = path.stem.replace("_", "-")
        if name in parsers:
            return (name,) + tuple(n for n in parsers if n.startswith(name + " ")), True
        return SHARED.get(path.stem, ()), False
    return SHARED_PACKAGES.get(path.parent.name, ()), False


# options of other programs or of the commands a message is about, named on purpose
ELSEWHERE = {("merge", "--shard"): "merge puts the shards of a --shard run together",
             ("cache", "--shard"): "cache merge folds the caches of --shard runs",
             ("check_endpoint", "--structured"): "check-endpoint says what the LLM commands' --structured sends"}


def test_every_message_names_options_of_the_command_that_prints_it():
    parsers = subparsers()
    wrong = []
    for package in ("cli", "llm", "judges"):
        for path in sorted((ROOT / "pyterrier_nuggets" / package).glob("*.py")):
            printers, nested = _printers(path, parsers)
            if not printers:
                continue
            for text in _strings(path):
                if OPTION.fullmatch(text):
                    continue  # an option's own name (add_argument, an argument list), not a message
                allowed = _allowed(text, printers, parsers, nested)
                for option in OPTION.findall(re.sub(r"pip install .*", "", text)):  # pip's own options
                    if option not in allowed and (path.stem, option) not in ELSEWHERE:
                        wrong.append(f"{path.relative_to(ROOT)}: {option} in {text[:90]!r}")
    assert not wrong, "\n".join(wrong)


# ------------------------------------------------------------------------------- dry runs and empty inputs

ANSWERS = [{"metadata": {"team_id": "t", "run_id": run, "type": "automatic", "narrative_id": q,
                         "narrative": f"question {q} about rivers"},
            "references": ["d1"], "answer": [{"text": f"{run} says rivers {q}.", "citations": [0]}]}
           for run in ("r1", "r2") for q in ("1", "2", "3")]


def _files(tmp_path):
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in ANSWERS))
    (tmp_path / "nuggets.jsonl").write_text("".join(json.dumps({"qid": q, "query": f"question {q}", "nuggets": [
        {"text": "rivers flow", "importance": "vital"}]}) + "\n" for q in ("1", "2", "3")))
    (tmp_path / "empty.jsonl").write_text("")


@pytest.mark.parametrize("argv", [
    ["arena", "--answers", "answers.jsonl", "--out", "o", "--dry-run", "--price", "0.15,0.60"],
    ["trec-rag", "--answers", "answers.jsonl", "--nuggets", "nuggets.jsonl", "--out", "o", "--dry-run"],
    ["arena", "--answers", "answers.jsonl", "--out", "o", "--dry-run", "--model", "gpt-4o-mini"],
], ids=["arena", "trec-rag", "arena with a model"])
def test_a_dry_run_needs_no_endpoint_and_shows_no_call_progress(argv, tmp_path, no_endpoint, capsys):
    _files(tmp_path)
    assert cli.main(argv) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    assert "requests" in out.lower() and "calls" in out.lower()  # the plan per stage
    assert "call/s" not in err and "it/s" not in err  # no progress bar of calls that are not made
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv", [
    ["trec-rag", "--answers", "empty.jsonl", "--nuggets", "nuggets.jsonl", "--out", "o", "--dry-run"],
    ["arena", "--answers", "empty.jsonl", "--answers", "answers.jsonl", "--out", "o", "--dry-run"],
    ["arena", "--battles", "empty.jsonl", "--out", "o"],
    ["agree", "empty.jsonl", "empty.jsonl"],
    ["calibrate", "empty.jsonl"],
    ["correlate", "empty.jsonl", "empty.jsonl", "--measure", "V_strict"],
    ["demo", "--nuggets", "empty.jsonl", "--llm", "offline", "--max-topics", "1", "--system", "bm25:1", "--out", "o"],
], ids=lambda a: " ".join(a[:3]))
def test_an_empty_input_file_is_one_line_never_a_bug(argv, tmp_path, no_endpoint, capsys):
    _files(tmp_path)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err


def test_tables_made_with_the_test_endpoint_say_so(server, tmp_path, no_endpoint, capsys):
    """The test endpoint names itself in every reply: the judges' labels of the tables say that no model judged."""
    _files(tmp_path)
    label = "(the TEST ENDPOINT of pyterrier-nuggets: deterministic replies, no model; not a judge)"
    argv = ["--base-url", server.base_url, "--model", "m"]
    assert cli.main(["trec-rag", "--answers", "answers.jsonl", "--nuggets", "nuggets.jsonl", "--out", "t", *argv]) == 0
    assert f"judges: m at {server.base_url} {label}" in capsys.readouterr().out
    assert cli.main(["arena", "--answers", "answers.jsonl", "--out", "a", "--prior", "1", "--resamples", "0",
                     "--no-plot", *argv]) == 0
    assert label in capsys.readouterr().out
    assert all(label in json.loads(line)["judge"] for line in open("a/battles.jsonl"))
    # and so do they when every answer comes from the cache (a re-run)
    assert cli.main(["trec-rag", "--answers", "answers.jsonl", "--nuggets", "nuggets.jsonl", "--out", "t2",
                     *argv]) == 0
    assert label in capsys.readouterr().out and server.count > 0


def test_on_failure_leaves_a_topic_out_for_every_run_or_stops(server, tmp_path, no_endpoint, capsys):
    """trec-rag with the nugget assignment of topic 2 unusable (still after the re-asks): by default (leave-out) topic
    2 is left out of every run's scores, named in a note, never scored; --on-failure stop ends with exit 1 and one
    report; --max-failed-share 0.1 stops when more than that share failed."""
    from pyterrier_nuggets.testing import INVALID, first_prompt
    _files(tmp_path)
    server.responder = lambda body: INVALID if "r1 says rivers 2." in first_prompt(body) else None
    argv = ["trec-rag", "--answers", "answers.jsonl", "--nuggets", "nuggets.jsonl", "--base-url", server.base_url,
            "--model", "m", "--max-failed-share", "0.5"]
    assert cli.main([*argv, "--out", "left-out"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "1 topic(s) left out of every run's scores (--on-failure leave-out)" in out and "2: nugget assignment" in out
    scores = [line.split("\t") for line in open("left-out/scores.tsv").read().splitlines()[1:]]
    assert {qid for _, qid, _, _ in scores} == {"1", "3", "all"}  # topic 2 in no run's rows, nor in its means
    assert {line.split()[0] for line in open("left-out/qrels.txt")} == {"1", "3"}
    assert cli.main([*argv, "--out", "stopped", "--on-failure", "stop"]) == 1
    err = capsys.readouterr().err
    assert "nugget assignment step(s) failed on 1 topic(s)" in err and "--on-failure leave-out" in err
    assert not os.path.exists("stopped")
    assert cli.main([*argv[:-2], "--max-failed-share", "0.1", "--out", "too-many"]) == 1
    assert "more than the 10% allowed by --max-failed-share" in capsys.readouterr().err


def test_calibrate_leaves_out_the_pairs_of_failed_decisions(server, tmp_path, no_endpoint, capsys):
    """calibrate --matcher llm: a pair whose decision still fails is left out of the fit, named on stderr (never
    taken for a no); with --on-failure stop the command ends with exit 1."""
    from pyterrier_nuggets.testing import INVALID, first_prompt
    pairs = [{"premise": f"Paris is the capital of France {i}.", "hypothesis": "Paris capital", "label": "yes",
              "group": str(i % 2), "id": f"y{i}"} for i in range(4)] + \
            [{"premise": f"Bananas are yellow {i}.", "hypothesis": "Paris capital", "label": "no", "group": str(i % 2),
              "id": f"n{i}"} for i in range(4)]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    server.responder = lambda body: INVALID if "yellow 3." in first_prompt(body) else None
    argv = ["calibrate", "pairs.jsonl", "--matcher", "llm", "--base-url", server.base_url, "--model", "m",
            "--resamples", "0", "--json", "--max-failed-share", "0.5"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    assert "1 labelled pair(s) left out (--on-failure leave-out): their LLM decision failed (ids n3)" in err
    assert json.loads(out)  # the report of the 7 other pairs
    assert cli.main([*argv, "--on-failure", "stop"]) == 1
    assert "CONE-RAG matching step(s) failed" in capsys.readouterr().err
