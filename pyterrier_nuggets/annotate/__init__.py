"""Human nugget annotation: the four-stage protocol of [nugget-annotation] (Yang et al., SIGIR 2025 demo) as a
multi-user web tool, with exports in the package's own formats (docs/annotation.md).

- :mod:`.config`: the project configuration (JSON) and the loading and cross-checking of its files;
- :mod:`.store`: one SQLite database per project (schema, users, sessions, audit trail);
- :mod:`.protocol`: the four stages, their rules, access checks and optimistic concurrency;
- :mod:`.export`: nugget, assignment, support files and evaluation runs (V_strict ... A, SupportP/R,
  ArgueP/R on the plain ``ir_measures`` command line);
- :mod:`.web`: the Starlette application and its templates, served by uvicorn (extra ``[annotate]``).
"""
from __future__ import annotations

from pyterrier_nuggets.annotate.config import ProjectInput, load_config
from pyterrier_nuggets.annotate.export import Export, export_project
from pyterrier_nuggets.annotate.store import Store, create_project


def init_project(config_path: str, directory: str, nuggets=None, passwords=None) -> Store:
    """Create a project directory from a configuration file (``nuggets`` may replace its nugget file with
    a nugget frame or NuggetSet, e.g. NuggetCreator output). ``passwords``: see :class:`Store`."""
    return create_project(load_config(config_path, nuggets), directory, passwords)


__all__ = ["init_project", "load_config", "ProjectInput", "create_project", "Store", "Export", "export_project"]
