"""Prompt templates, kept as data files next to this module (one per figure of the seeds).

A template file has optional ``#`` comment lines, then ``SYSTEM:`` and/or ``USER:`` lines, each
followed by that message's text. ``{name}`` placeholders are filled by :meth:`PromptTemplate.render`;
values are inserted verbatim (braces inside a query or a segment are never interpreted). To change a
prompt, copy the file, edit it and pass its path (or a :class:`PromptTemplate`) as ``prompt=...``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ir_measures_ext.errors import InvalidInput

PROMPT_DIR = Path(__file__).parent
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ROLES = {"SYSTEM:": "system", "USER:": "user"}


@dataclass(frozen=True)
class PromptTemplate:
    """Chat messages with ``{name}`` placeholders; ``source`` says where the template came from."""

    messages: tuple[tuple[str, str], ...]
    source: str = "<string>"

    @classmethod
    def parse(cls, text: str, source: str = "<string>") -> PromptTemplate:
        messages: list[list] = []
        lines = text.splitlines()
        for lineno, line in enumerate(lines, 1):
            if not messages and (line.startswith("#") or not line.strip()):
                continue
            role = _ROLES.get(line.strip())
            if role is not None:
                messages.append([role, []])
            elif not messages:
                raise InvalidInput(f"{source}:{lineno}: expected SYSTEM: or USER: before the prompt text")
            else:
                messages[-1][1].append(line)
        if not messages:
            raise InvalidInput(f"{source}: no SYSTEM: or USER: message")
        return cls(tuple((role, "\n".join(body).strip("\n")) for role, body in messages), source)

    @classmethod
    def load(cls, path: str | os.PathLike) -> PromptTemplate:
        path = Path(path)
        return cls.parse(path.read_text(encoding="utf-8"), str(path))

    @property
    def placeholders(self) -> set[str]:
        return {m.group(1) for _, text in self.messages for m in _PLACEHOLDER.finditer(text)}

    def render(self, **values) -> list[dict]:
        """The chat messages with every placeholder replaced; a missing value is an error."""
        missing = self.placeholders - values.keys()
        if missing:
            raise KeyError(f"prompt {self.source} needs values for {sorted(missing)}")

        def fill(text: str) -> str:
            return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)

        return [{"role": role, "content": fill(text)} for role, text in self.messages]

    def __repr__(self) -> str:
        return f"PromptTemplate({self.source!r})"


def load_prompt(prompt: None | str | os.PathLike | PromptTemplate, default: str) -> PromptTemplate:
    """``prompt`` as a template: ``None`` -> the packaged ``default`` file; a path; or a template."""
    if prompt is None:
        return PromptTemplate.load(PROMPT_DIR / default)
    if isinstance(prompt, PromptTemplate):
        return prompt
    return PromptTemplate.load(prompt)


# The packaged prompt files, by the step that uses them (each file names its source in its comments).
NUGGET_CREATION = "nugget_creation.txt"
NUGGET_SCORING = "nugget_scoring.txt"
NUGGET_ASSIGNMENT = "nugget_assignment.txt"
NUGGET_ASSIGNMENT_2GRADE = "nugget_assignment_2grade.txt"
CITED_GENERATION = "cited_generation.txt"
CITED_GENERATION_RESOLVED = "cited_generation_resolved.txt"  # iKAT: the resolved utterance
CITED_GENERATION_RAW = "cited_generation_raw.txt"  # iKAT: raw utterance, history and PTKB
CITED_GENERATION_2026 = "cited_generation_2026.txt"  # TREC RAG 2026 answer rules (word and citation limits)
SUPPORT_JUDGMENT = "support_judgment.txt"
BIOGEN_RELATION = "biogen_relation.txt"  # ours: [nugget-annotation §3.3] names the relations, prints no prompt
RELEVANCE_UMBRELA = "relevance_umbrela.txt"
RELEVANCE_UMBRELA_SUBNARRATIVES = "relevance_umbrela_subnarratives.txt"  # TREC RAG 2025/2026, 0-4
RUBRIC_GRADING = "rubric_grading.txt"
PAIRWISE_NAIVE = "pairwise_naive.txt"  # the arena's battles (ours; docs/arena.md)
PAIRWISE_RUBRIC = "pairwise_rubric.txt"  # the arena's battles guided by the topic's criteria or nuggets
CONE_EXTRACTION = "cone_extraction.txt"
CONE_NTR = "cone_ntr.txt"
REASK_LIST = "reask_list.txt"
REASK_GENERATION = "reask_generation.txt"
REASK_SUPPORT = "reask_support.txt"
REASK_BIOGEN = "reask_biogen.txt"
REASK_RELEVANCE = "reask_relevance.txt"
REASK_RELEVANCE_SUBNARRATIVES = "reask_relevance_subnarratives.txt"
REASK_YESNO = "reask_yesno.txt"
REASK_LABEL = "reask_label.txt"  # a judge of whole answers with labels other than yes / no
REASK_EXTRACTION = "reask_extraction.txt"
REASK_PAIRWISE = "reask_pairwise.txt"
