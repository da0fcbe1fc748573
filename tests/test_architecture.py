"""The layout's rules (decisions.md, decision 6, docs/architecture.md), checked on the source: which package may
import which, and no module importing another module's private names."""
import ast
import importlib
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# layer of each part of pyterrier_nuggets: a module may import its own layer and the layers below it
LAYERS = {
    "records": 0, "docstore": 0, "prompts": 0, "formats": 0, "lazy": 0, "ports": 0,
    "llm": 1,
    "judges": 2,
    "matchers": 2,  # the LLM matcher is a judge; judges never import matchers
    "evaluation": 3,
    "testing": 3,  # the test endpoint: judges' replies; never evaluation's
    "pipeline": 4,
    "annotate": 4,
    "report": 4,  # the HTML report of output folders: reads them with formats and evaluation
    "cli": 5,
    "__init__": 6,  # the facade: re-exports the public names
}
NO_PYTERRIER_OR_OPENAI = {"records", "docstore", "prompts", "formats", "lazy", "ports"}
# parts of one layer that must not import each other: (importer, imported)
NOT_SIDEWAYS = {("judges", "matchers"),  # the LLM matcher is a judge; judges never import matchers
                ("pipeline", "annotate"), ("annotate", "pipeline"),  # the main job and the annotation tool
                ("testing", "evaluation"), ("evaluation", "testing")}  # the test endpoint and what it is used for
# what the two extensions may import of this distribution (docs/architecture.md, "Three packages")
EXTENSIONS = {"ir_measures_ext": {"ir_measures_ext", "nuggets_core"},
              "datasets_ext": {"datasets_ext", "nuggets_core"},
              "nuggets_core": {"nuggets_core"}}


def modules(package: str):
    for path in sorted((ROOT / package).rglob("*.py")):
        yield path, ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imports(path: Path):
    """(imported module, imported names) for every import statement, at any depth, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(ROOT).parent.parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            yield module, [alias.name for alias in node.names]


def part(module: str) -> str | None:
    pieces = module.split(".")
    return pieces[1] if pieces[0] == "pyterrier_nuggets" and len(pieces) > 1 else None


@pytest.mark.parametrize("path,module", list(modules("pyterrier_nuggets")), ids=lambda x: str(x))
def test_layer_rule(path, module):
    own = part(module)
    if own is None or own not in LAYERS:
        assert own is None, f"{module}: part {own!r} is not in the layer table"
        return
    for imported, _ in imports(path):
        other = part(imported)
        if other in LAYERS:
            assert LAYERS[other] <= LAYERS[own], f"{module} imports {imported}: upward (layer {own} -> {other})"
            assert (own, other) not in NOT_SIDEWAYS, f"{module} imports {imported}: {own} never imports {other}"
        if own in NO_PYTERRIER_OR_OPENAI:
            top = imported.split(".")[0]
            assert top not in ("pyterrier", "openai"), f"{module} imports {imported}"


@pytest.mark.parametrize("package", ["pyterrier_nuggets", "ir_measures_ext", "datasets_ext", "nuggets_core"])
def test_no_private_names_across_modules(package):
    for path, module in modules(package):
        for imported, names in imports(path):
            if imported == module:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not private, f"{module} imports private {private} from {imported}"
            assert not any(p.startswith("_") for p in imported.split(".")[1:]), f"{module} imports {imported}"


def test_extensions_stay_light():
    """ir_measures_ext is loaded by the plain ir_measures command line, datasets_ext by ir_datasets: neither
    may import pyterrier_nuggets, pyterrier or openai (nor may nuggets_core, which both import)."""
    for package in ("ir_measures_ext", "datasets_ext", "nuggets_core"):
        for path, module in modules(package):
            for imported, _ in imports(path):
                assert imported.split(".")[0] not in ("pyterrier_nuggets", "pyterrier", "openai"), \
                    f"{module} imports {imported}"


@pytest.mark.parametrize("package", sorted(EXTENSIONS))
def test_extensions_import_only_what_they_may(package):
    """ir_measures_ext imports nothing else of the distribution but nuggets_core (the row ids and the error kinds);
    datasets_ext the same, never ir_measures_ext (so ``import ir_datasets`` never imports ir_measures); nuggets_core
    nothing (``from nuggets_core import ids`` counts as ``nuggets_core.ids``)."""
    allowed = EXTENSIONS[package]
    for path, module in modules(package):
        for imported, names in imports(path):
            top = imported.split(".")[0]
            if top not in ("ir_measures_ext", "datasets_ext", "pyterrier_nuggets", "nuggets_core"):
                continue
            targets = [imported] if imported != top else [f"{top}.{n}" for n in names]
            for target in targets:
                assert any(target == a or target.startswith(a + ".") or target == top == a for a in allowed), \
                    f"{module} imports {target}"


TEXT_SUFFIXES = (".py", ".md", ".txt", ".html", ".js", ".css", ".cfg", ".toml", ".sh", ".pth", ".json", ".jsonl",
                 ".csv", ".tsv")
NOT_OURS = {"build", "dist", "out", "__pycache__", "node_modules"}  # made by tools or runs (and hidden folders, .venv)
# what no reader of the repository can resolve: a seed number ("seed 002", and in names seed_002, seed002,
# SEED002; after a key, [support24]/004), the notes the package was designed from, an issue of the tracker the
# package was built with ("issue 10", "issues 34 and 38", "Issue 15's", "issue-10"). Cite docs/references.md and
# docs/decisions.md instead. This file holds the examples the check must catch, so it is the one file not read.
UNRESOLVABLE = re.compile(r"(?i)seeds?[ _-]?00\d|\]/00\d|design\.md|\bissues?[ #-]*\d")


def _tracked_text_files():
    """Every text file of the repository: code, tests, docs, benchmarks, scripts, data, configuration."""
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in NOT_OURS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.endswith(TEXT_SUFFIXES):
                yield Path(folder) / name


def test_references_resolve_inside_the_repository():
    """Papers are cited by the keys of docs/references.md (``[cone-rag §4.2]``), decisions by docs/decisions.md:
    no seed number, design note or issue number, in text or in a name (decisions.md, decision 12)."""
    keys = set(re.findall(r"^\| `\[([a-z0-9-]+)\]` \|", (ROOT / "docs" / "references.md").read_text(), re.M))
    assert {"nugget-recall", "autonuggetizer", "support24", "nugget-annotation", "cone-rag"} <= keys
    checked = 0
    for path in _tracked_text_files():
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        checked += 1
        for number, line in enumerate(text.splitlines(), 1):
            found = UNRESOLVABLE.search(line)
            assert not found, f"{path.relative_to(ROOT)}:{number}: {found.group()!r} resolves nowhere in the repository"
        for key in set(re.findall(r"\[([a-z][a-z0-9-]*) (?:§|Table|Fig|eq\.|Eq\.|Appendix)", text)) - {"key"}:
            assert key in keys, f"{path.relative_to(ROOT)}: [{key} ...] is not in docs/references.md"
    assert checked > 300  # the walk found the repository's files


@pytest.mark.parametrize("text", ["(issue 10)", "Issue 15's targets", "issues 34 and 38", "issue-27", "issue #9",
                                  "def test_table_1_of_seed_002", "SEED004 = [", "seed 001 §3", "../shared/design.md",
                                  "the AutoNuggetizer ([nugget-recall]/001)"])
def test_the_reference_check_catches(text):
    assert UNRESOLVABLE.search(text)


@pytest.mark.parametrize("text", ["the issue tracker of ir_datasets (github.com/allenai/ir_datasets/issues/281)",
                                  "seed=42", "--seed 0", "random.Random(seed)", "this issue of the journal"])
def test_the_reference_check_leaves_alone(text):
    assert not UNRESOLVABLE.search(text)


def _format_table() -> list[list[str]]:
    """The rows of docs/architecture.md, "Where each format is read": format, parser, reader / writer, section."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Where each format is read", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| format |")]
    assert rows and all(len(r) == 4 for r in rows), "the table has four columns"
    return rows


def test_format_modules_say_which_half_they_hold():
    """decisions.md, decision 15: a format's parser in datasets_ext is named ``<format>_parser.py``, its reader and
    writer in formats ``<family>_io.py``; no module of one folder shares its name with a module of the other (but the
    package files and ``files.py``, which hold no format: downloads and atomic writes, and the readers' policies)."""
    datasets = {p.stem for p in (ROOT / "datasets_ext").glob("*.py")}
    formats = {p.stem for p in (ROOT / "pyterrier_nuggets" / "formats").glob("*.py")}
    assert datasets & formats == {"__init__", "files"}
    assert {"nugget_parser", "rubric_parser", "cone_parser", "ikat_parser"} <= datasets
    assert not {s for s in formats if s.endswith("_parser")} and not {s for s in datasets if s.endswith("_io")}


def test_every_format_module_is_in_the_format_table():
    """Each parser and reader/writer module, and only existing ones, in the table; each name the table gives a module
    defined there; each section link a heading of docs/formats.md."""
    rows = _format_table()
    named = set(re.findall(r"`((?:datasets_ext|pyterrier_nuggets|ir_measures_ext)/[\w/]+\.py)`", str(rows)))
    for path in named:
        assert (ROOT / path).is_file(), f"docs/architecture.md names {path}, which does not exist"
    modules = {f"datasets_ext/{p.name}" for p in (ROOT / "datasets_ext").glob("*_parser.py")}
    modules |= {f"pyterrier_nuggets/formats/{p.name}" for p in (ROOT / "pyterrier_nuggets" / "formats").glob("*_io.py")}
    assert modules <= named, f"not in the format table: {sorted(modules - named)}"
    for cell in (c for row in rows for c in row[1:3]):
        for path, names in re.findall(r"`([\w/]+\.py)` \(([^)]*)\)", cell):
            module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
            for name in re.findall(r"`(\w+)`", names):
                assert hasattr(module, name), f"docs/architecture.md: {path} has no {name}"
    formats_md = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
             for h in re.findall(r"^#+ (.*)$", formats_md, re.M)}
    for anchor in re.findall(r"formats\.md#([\w\-]+)", str(rows)):
        assert anchor in slugs, f"docs/architecture.md links formats.md#{anchor}, which is no heading"


# ------------------------------------------------------------------------------------------ the import graph

PACKAGES = ("pyterrier_nuggets", "ir_measures_ext", "datasets_ext", "nuggets_core")


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of this distribution it imports, at any depth (a function's imports too): ``from P import
    N`` is an edge to the module ``P.N`` when there is one, else to ``P`` (a package: its ``__init__``)."""
    paths = {module.removesuffix(".__init__"): path for package in PACKAGES for path, module in modules(package)}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        edges = graph.setdefault(module, set())
        for imported, names in imports(path):
            targets = [f"{imported}.{n}" for n in names if f"{imported}.{n}" in paths]
            if len(targets) < len(names) or not names:
                targets.append(imported)
            edges.update(t for t in targets if t in paths and t != module)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_circles_are_found():
    """The check itself: a circle of three modules is found, a chain is not."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_import_graph_has_no_circle():
    """No module imports, directly or through others, a module that imports it (imports inside functions count):
    each part can be read, tested and changed from the bottom up."""
    graph = import_graph()
    assert "pyterrier_nuggets.judges.parallel" in graph["pyterrier_nuggets.judges.base"]  # the graph sees edges
    assert circles(graph) == []


# ------------------------------------------------------------------------------------- the main job's functions

MAX_PARAMETERS = 6  # a function that needs more takes an object that holds them (the main job's MainJob)
ARGPARSE_METHODS = {"__init__", "__call__"}  # an argparse Action's: they take what argparse passes them


def parameter_counts(path: Path):
    """(function, line, how many parameters) of every function of a module: its parameters but ``self`` / ``cls``,
    ``*args`` and ``**kwargs`` counting one each; an argparse Action's own methods are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    argparse_own = {id(item) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                    and any("Action" in ast.unparse(b) or "Alias" in ast.unparse(b) for b in node.bases)
                    for item in node.body if isinstance(item, ast.FunctionDef) and item.name in ARGPARSE_METHODS}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in argparse_own:
            a = node.args
            names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
            if names[:1] in (["self"], ["cls"]):
                names = names[1:]
            yield node.name, node.lineno, len(names) + (a.vararg is not None) + (a.kwarg is not None)


def test_parameter_counts_are_counted():
    """The check itself, on a module written for it."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.py"
        path.write_text("def f(a, b, *c, d=1, **e): pass\nclass A:\n    def g(self, a): pass\n"
                        "class X(argparse.Action):\n    def __init__(self, a, b, c, d, e, f, g): pass\n")
        assert sorted(parameter_counts(path)) == [("f", 1, 5), ("g", 3, 1)]


@pytest.mark.parametrize("part", ["pipeline", "cli"])
def test_no_function_of_the_main_job_or_the_command_line_takes_more_than_six_parameters(part):
    """The main job and the commands hold what they pass around in one object instead of passing 8-12 values down
    (argparse's own signatures aside)."""
    wide = [f"{path.relative_to(ROOT)}:{line} {name} ({count})" for path, _ in modules(f"pyterrier_nuggets/{part}")
            for name, line, count in parameter_counts(path) if count > MAX_PARAMETERS]
    assert not wide, f"functions with more than {MAX_PARAMETERS} parameters: {wide}"
