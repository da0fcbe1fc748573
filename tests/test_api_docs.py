"""The public API documents itself: every public class and function has a docstring with a reST
parameter section, the main entry points have an ``Examples::`` block that compiles, and docs/api.md indexes
every public name with the module that defines it.

In scope ("public"): every class and function named in ``pyterrier_nuggets.__all__`` and in the ``__all__`` of
its subpackages (``SUBPACKAGES``), plus the classes and functions of ``ir_measures_ext`` and ``datasets_ext``
that the documentation names and the plots api.md names (``NAMED_BY_DOCS``). Constants and modules carry no
parameters and are left out; the measures of ``ir_measures_ext`` declare their parameters as ir_measures does
(``SUPPORTED_PARAMS``, each with a ``desc``), which ``test_measure_parameters_are_described`` checks.

The rule, per callable: for a function, its signature; for a class, the signature of calling it (the
constructor's parameters, documented in the class docstring, as pyterrier does). ``self`` and ``*args`` need
no entry; every other parameter, keyword-only ones and ``**kwargs`` included, needs a line ``:param NAME:``
(for ``**options``: ``:param options:``, saying what goes there). A ``:param NAME:`` for a parameter the
signature does not have is an error too (a renamed parameter leaves a stale entry).

Examples are not executed (they need models, endpoints and files), but they must parse, import only what exists
and call the public classes and functions with arguments their signatures accept.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SUBPACKAGES = ["pyterrier_nuggets"] + [f"pyterrier_nuggets.{name}" for name in
                                       ("formats", "evaluation", "judges", "matchers", "llm", "steps", "pipeline", "report",
                                        "testing")]
# the classes and functions of the two extensions that docs/measures.md or docs/datasets.md name, with
# ir_measures_ext.register (what importing it runs), and the plots docs/api.md names
NAMED_BY_DOCS = {
    "ir_measures_ext": ["register"],
    "ir_measures_ext.ids": ["nugget_id", "sentence_nugget_id"],
    "ir_measures_ext.scoring": ["nugget_scores", "cone_scores", "consensus_label"],
    "datasets_ext": ["MsMarcoV21Segment", "SegmentsNotFound", "parse_segment_id", "Nugget", "InvalidNuggetWarning"],
    "datasets_ext.segments": ["segment_docs", "SegmentShards", "UpstreamSegmentsWarning"],
    "datasets_ext.ikat_parser": ["IkatQuery", "parse_ikat_topics"],
    "datasets_ext.nugget_parser": ["read_nugget_lines", "sub_narrative_rows"],
    "datasets_ext.rubric_parser": ["RubricCriterion"],
    "pyterrier_nuggets.evaluation.plots": ["write_plots"],
}
# the main entry points: an Examples:: block each
WITH_EXAMPLES = [
    "NuggetCreator", "NuggetScorer", "NuggetAssigner", "CitedGenerator", "SupportJudge", "RelevanceJudge",
    "BioGenJudge", "RubricJudge", "NuggetExtractor", "JudgeEnsemble", "Overlapped", "NuggetToResponse",
    "NuggetToNugget", "RAGEvaluation", "joint_table", "correlate", "agreement", "LLMClient", "run_main_job",
    "calibrate",
]


def public_callables() -> dict[str, object]:
    """``module.name`` -> object, each object once (under the module that defines it)."""
    found: dict[int, tuple[str, object]] = {}
    named = [(package, name) for package in SUBPACKAGES for name in importlib.import_module(package).__all__]
    named += [(module, name) for module, names in NAMED_BY_DOCS.items() for name in names]
    for module, name in named:
        obj = getattr(importlib.import_module(module), name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            found.setdefault(id(obj), (f"{obj.__module__}.{obj.__qualname__}", obj))
    return dict(sorted(found.values()))


def own_docstring(obj) -> str:
    """The docstring written for ``obj``: a class's own (not inherited, not the one dataclasses make up)."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    if not doc or (inspect.isclass(obj) and doc.startswith(f"{obj.__name__}(")):
        return ""
    return inspect.cleandoc(doc)


def parameters(obj) -> list[str]:
    """The parameters a docstring must describe: every one but ``self`` and ``*args``."""
    try:
        signature = inspect.signature(obj)
    except ValueError:  # an exception class with the built-in constructor: nothing of its own
        return []
    return [p.name for p in signature.parameters.values()
            if p.name != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL]


def documented(doc: str) -> list[str]:
    return re.findall(r"^\s*:param (\w+):", doc, flags=re.MULTILINE)


def problems(obj) -> list[str]:
    """What is wrong with ``obj``'s parameter section (empty: nothing)."""
    doc = own_docstring(obj)
    if not doc:
        return ["no docstring"]
    wanted, given = parameters(obj), documented(doc)
    found = [f"no ':param {name}:'" for name in wanted if name not in given]
    found += [f"':param {name}:' names no parameter" for name in given if name not in wanted]
    found += [f"':param {name}:' given twice" for name in sorted(set(given)) if given.count(name) > 1]
    return found


def examples(doc: str) -> list[str]:
    """The code of every ``Examples::`` block of a docstring (the indented lines after it)."""
    blocks = []
    for match in re.finditer(r"^Examples::\n\n((?:(?:[ \t]+\S.*)?\n)+)", doc + "\n", flags=re.MULTILINE):
        blocks.append(textwrap.dedent(match.group(1)).strip("\n"))
    return blocks


CALLABLES = public_callables()


def test_scope_is_the_public_api():
    # the transformers and entry points are there, each once; a subpackage's __all__ losing them would shrink scope
    names = {name.rsplit(".", 1)[1] for name in CALLABLES}
    assert set(WITH_EXAMPLES) <= names
    assert len(CALLABLES) > 200


@pytest.mark.parametrize("name", list(CALLABLES))
def test_every_parameter_is_documented(name):
    assert problems(CALLABLES[name]) == [], f"{name}: the docstring's parameter section"


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_main_entry_points_have_examples(name):
    obj = next(obj for qualified, obj in CALLABLES.items() if qualified.rsplit(".", 1)[1] == name)
    assert examples(own_docstring(obj)), f"{name}: no Examples:: block"


BY_NAME = {qualified.rsplit(".", 1)[1]: obj for qualified, obj in CALLABLES.items()}


@pytest.mark.parametrize("name", [name for name, obj in CALLABLES.items() if examples(own_docstring(obj))])
def test_examples_are_python_and_call_what_exists(name):
    """Examples are not run (they need models, endpoints, files), but they parse, what they import exists, and every
    call of a public class or function by its name binds to its signature (no unknown or missing argument)."""
    for code in examples(own_docstring(CALLABLES[name])):
        tree = ast.parse(code)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in (
                    "pyterrier_nuggets", "ir_measures_ext", "datasets_ext"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{name}: example imports {node.module}.{alias.name}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BY_NAME \
                    and not any(isinstance(a, ast.Starred) for a in node.args) \
                    and all(k.arg is not None for k in node.keywords):
                signature = inspect.signature(BY_NAME[node.func.id])
                try:
                    signature.bind(*node.args, **{k.arg: k.value for k in node.keywords})
                except TypeError as e:
                    raise AssertionError(f"{name}: example calls {ast.unparse(node)}: {e}") from None


def test_the_check_finds_a_missing_or_stale_parameter():
    def documented_fully(a, *args, b=1, **options):
        """Summary.

        :param a: one.
        :param b: two.
        :param options: the rest.
        """

    def missing_one(a, b):
        """Summary.

        :param a: one.
        """

    def stale(a):
        """Summary.

        :param a: one.
        :param old: gone.
        """

    class Record:
        def __init__(self, value, *, flag=False):
            pass

    assert problems(documented_fully) == []
    assert problems(missing_one) == ["no ':param b:'"]
    assert problems(stale) == ["':param old:' names no parameter"]
    assert problems(Record) == ["no docstring"]
    Record.__doc__ = "Summary.\n\n:param value: v.\n"
    assert problems(Record) == ["no ':param flag:'"]


def test_measure_parameters_are_described():
    import ir_measures_ext
    for measure in ir_measures_ext.ALL_MEASURES + (ir_measures_ext.Segments,):
        assert own_docstring(type(measure)), measure
        for param, info in measure.SUPPORTED_PARAMS.items():
            assert info.desc, f"{measure.NAME}: parameter {param} has no desc"


# docs/api.md, "Index of public names": | `name` | [`module`](../path/to/module.py) | what |, the name in bold when
# ``pyterrier_nuggets`` exports it
ROW = re.compile(r"^\| (\*\*)?`(\w+)`(?:\*\*)? \| \[`([\w.]+)`\]\(\.\./([\w/]+\.py)\) \| (.+) \|$")


def index_rows() -> list[tuple[str, str, str, bool]]:
    """(name, module, path, bold) of every row of the index."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = text.split("## Index of public names", 1)[1]
    return [(m.group(2), m.group(3), m.group(4), bool(m.group(1))) for m in map(ROW.match, section.splitlines()) if m]


def test_api_index_names_every_public_name_with_its_module():
    rows = index_rows()
    listed = {name for name, _, _, _ in rows}
    for package in SUBPACKAGES:
        missing = set(importlib.import_module(package).__all__) - listed
        assert not missing, f"docs/api.md does not index {package}: {sorted(missing)}"
    for module, names in NAMED_BY_DOCS.items():
        assert set(names) <= listed, f"docs/api.md does not index {module}: {sorted(set(names) - listed)}"
    facade = importlib.import_module("pyterrier_nuggets")
    for name, module, path, bold in rows:
        assert (ROOT / path).is_file(), f"{name}: link to {path}"
        assert module == path.removesuffix(".py").removesuffix("/__init__").replace("/", "."), (name, module, path)
        holder = importlib.import_module(module)
        obj = getattr(holder, name, None)
        if obj is None and module.endswith(f".{name}"):  # a module: its own row (``formats``)
            obj = holder
        assert obj is not None, f"docs/api.md: {module} has no {name}"
        assert bold == (name in facade.__all__ and getattr(facade, name) is obj), \
            f"docs/api.md: {name} of {module} is bold exactly when pyterrier_nuggets exports it"
