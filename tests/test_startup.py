"""Start-up stays light: what ``import pyterrier_nuggets``, the command line's ``--help`` and the public
names load, checked on ``sys.modules`` in a fresh interpreter. The times themselves are measured by
benchmarks/startup.py (docs/benchmarks.md), never asserted here."""
import json
import subprocess
import sys

import pytest

# loaded only where used: the models, plotting, the embedded LLM, the annotation server, Java
HEAVY = ["torch", "sentence_transformers", "transformers", "matplotlib", "llama_cpp", "starlette", "fastapi",
         "uvicorn", "jnius", "pyterrier_pisa", "pyterrier_dr", "sklearn", "statsmodels"]
# what the package itself needs, but not to start: neither importing it nor --help loads them
LIBRARIES = ["pandas", "numpy", "ir_datasets", "openai", "pyterrier", "scipy"]


def loaded(code: str, modules: list[str]) -> list[str]:
    """The modules of ``modules`` in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_loads_nothing_heavy():
    assert loaded("import pyterrier_nuggets", HEAVY + LIBRARIES) == []


def test_help_loads_nothing_heavy():
    code = ("import contextlib, io\nfrom pyterrier_nuggets.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n    main(['--help'])\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n    main(['demo', '--help'])")
    assert loaded(code, HEAVY + LIBRARIES) == []


def test_public_names_load_no_model_plotting_or_java():
    """Every public name (and the main job, plots module, annotation tool) can be imported without loading a model
    library, matplotlib, the embedded model, the web server or pyterrier's Java."""
    code = ("from pyterrier_nuggets import *\nimport pyterrier_nuggets as p\n[getattr(p, n) for n in p.__all__]\n"
            "import pyterrier_nuggets.pipeline.main_job, pyterrier_nuggets.evaluation.plots, pyterrier_nuggets.annotate")
    assert loaded(code, HEAVY) == []


def test_lazy_names_are_the_defining_modules_objects():
    import pyterrier_nuggets
    from pyterrier_nuggets.evaluation.table import joint_table
    from pyterrier_nuggets.pipeline.main_job import run_main_job
    assert pyterrier_nuggets.joint_table is joint_table
    assert pyterrier_nuggets.pipeline.run_main_job is run_main_job
    assert "joint_table" in dir(pyterrier_nuggets) and "formats" in dir(pyterrier_nuggets)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        pyterrier_nuggets.nothing_here  # noqa: B018
