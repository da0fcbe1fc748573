"""Options that several commands share, defined once: ``--base-url`` (one LLM endpoint, or several replicas of one
model: docs/llm.md, "Several endpoints")."""
from __future__ import annotations


def add_base_url(parser, help: str) -> None:
    """``--base-url URL``, repeatable (a list of addresses, or None when not given); ``help`` says what the endpoint
    is for, with an example."""
    parser.add_argument("--base-url", action="append", metavar="URL",
                        help=f"{help}; give it more than once for several endpoints serving the same model (each "
                             "request goes where there is room; one that fails is taken out of rotation)")
