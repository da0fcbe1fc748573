"""Structured output: a JSON schema of the reply a judge expects, sent where the endpoint takes one, so that a model
(a small one above all) cannot answer in another form. The schema constrains the model's decoding only: the prompt
text stays word for word as the papers print it, and the reply is read by the same parsers (which take a list or a
label inside a JSON object).

Servers take it in two forms (docs/llm.md, "Which server, which options"):

- :data:`~.profile.JSON_SCHEMA`: OpenAI's ``{"type": "json_schema", "json_schema": {"name", "schema", "strict":
  true}}``, also vLLM's and SGLang's guided decoding and Ollama's structured outputs. OpenAI's strict mode wants an
  object at the root, ``additionalProperties: false`` and every property required (:func:`strict_schema`);
- :data:`~.profile.JSON_OBJECT`: llama.cpp's ``{"type": "json_object", "schema": ...}`` (llama-cpp-python's server
  and the embedded model; the server refuses ``json_schema``).

Which one an endpoint takes is probed (``pyterrier-nuggets check-endpoint``, or on first use with
``Sampling(json_mode=True)`` / ``--structured on``: :data:`PROBE_MESSAGES` with :data:`PROBE_SCHEMA`, in each form in
turn, until a reply conforms) and remembered in the response cache with the model's profile (:mod:`.profile`).
"""
from __future__ import annotations

import copy
import json

from pyterrier_nuggets.llm.profile import JSON_OBJECT, JSON_SCHEMA

#: the tiny question of every probe (``check-endpoint``, and the probe of structured output)
PROBE_MESSAGES = [{"role": "user", "content": "Reply with the single word OK."}]
#: the schema of the probe's reply: a server that constrains decoding answers ``{"answer": "OK"}``
PROBE_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["OK"]}}, "required": ["answer"]}
#: the name of the property that holds a list at the root of a strict schema (OpenAI's root must be an object)
ROOT = "answer"
#: the forms probed, in order
PROBED = (JSON_SCHEMA, JSON_OBJECT)


def strict_schema(schema: dict) -> dict:
    """``schema`` as OpenAI's strict mode takes it: an object at the root (a list is put in the property
    :data:`ROOT`), ``additionalProperties: false`` and every property required in each object.

    :param schema: a judge's schema (a list of labels, of nuggets; an object with one label).
    """
    schema = copy.deepcopy(schema)
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {ROOT: schema}, "required": [ROOT]}
    todo = [schema]
    while todo:
        node = todo.pop()
        if node.get("type") == "object":
            node["additionalProperties"] = False
            node["required"] = list(node.get("properties", {}))
            todo += [v for v in node.get("properties", {}).values() if isinstance(v, dict)]
        if isinstance(node.get("items"), dict):
            todo.append(node["items"])
    return schema


def response_format(schema: dict, form: str) -> dict:
    """The ``response_format`` of a request whose reply ``schema`` describes, in ``form``
    (:data:`~.profile.JSON_SCHEMA` or :data:`~.profile.JSON_OBJECT`).

    :param schema: the reply's JSON schema.
    :param form: the form the endpoint takes.
    """
    if form == JSON_SCHEMA:
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": strict_schema(schema),
                                                         "strict": True}}
    if form == JSON_OBJECT:
        return {"type": "json_object", "schema": schema}
    raise ValueError(f"no response_format of the form {form!r}")


def conforms(text: str | None) -> bool:
    """Whether the probe's reply is the one its schema allows: ``{"answer": "OK"}`` (an endpoint that took the
    schema and constrained the reply; one that ignores it answers ``OK``)."""
    try:
        return json.loads(text or "") == {"answer": "OK"}
    except ValueError:
        return False
