"""How the servers a TREC participant judges with answer, emulated by the test endpoint (``TestEndpoint(profile=...)``,
``pyterrier-nuggets test-endpoint --profile NAME``): each :class:`ServerProfile` reproduces what the server's
documentation says of the parameters it refuses (with its error body), where a reasoning model's thinking goes, which
structured output it takes, how it reports usage. The client is tested against each (docs/llm.md, "Which server,
which options"); llama-cpp-python's own server is tested for real (tests/test_real_server.py).

=====================  ==========================================================================================
profile                what it emulates
=====================  ==========================================================================================
``openai``             OpenAI's chat completions with a model that is not a reasoning model (gpt-4o, gpt-4.1):
                       every sampling parameter; ``reasoning_effort`` refused (``unsupported_parameter``);
                       ``response_format`` ``json_schema`` (strict: the root an object, ``additionalProperties``
                       false, every property required) and ``json_object``
``openai-reasoning``   OpenAI's reasoning models (o-series, the GPT-5 family), and Azure OpenAI's ``/openai/v1``
                       with such a deployment: ``temperature`` / ``top_p`` other than 1 refused
                       (``unsupported_value``), ``max_tokens``, ``stop``, penalties and log-probabilities refused
                       (``unsupported_parameter``: ``max_completion_tokens`` instead, which counts the reasoning
                       tokens too; a limit too small for them leaves the content empty, ``finish_reason`` length);
                       ``reasoning_effort`` taken; the reasoning is not returned, only counted
                       (``usage.completion_tokens_details.reasoning_tokens``)
``think``              an open reasoning model (Qwen3, DeepSeek-R1 distills) on a server without a reasoning
                       parser (vLLM, SGLang, llama.cpp): the thinking in the content, ``<think>...</think>`` before
                       the answer; a token limit that ends inside it cuts the block before it closes
``vllm``, ``sglang``   vLLM and SGLang with a reasoning parser (``--reasoning-parser``): the thinking in
                       ``reasoning_content``; guided decoding through ``response_format`` ``json_schema`` and
                       ``json_object``
``ollama``             Ollama's OpenAI-compatible endpoint with a thinking model: the thinking in ``reasoning``;
                       ``response_format`` ``json_schema`` and ``json_object``
``llama-cpp``          llama-cpp-python's server (``python -m llama_cpp.server``): ``response_format``
                       ``{"type": "json_object", "schema": ...}``; ``json_schema`` refused (HTTP 500: its
                       request validation's error, as the real server sends it)
``fenced``             a model that puts its answer in a Markdown code fence (```json ... ```)
=====================  ==========================================================================================
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

#: the parameters an OpenAI reasoning model takes only at their default (``unsupported_value`` otherwise)
DEFAULT_ONLY = {"temperature": 1, "top_p": 1}
#: the parameters an OpenAI reasoning model refuses outright (``unsupported_parameter``)
REFUSED = ("max_tokens", "stop", "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs", "logit_bias")
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
# what a reasoning model thinks before it answers: as real thinking does, it weighs the labels and recites the form
# of the answer ([1], a list, a score), so a parser that reads the whole reply finds the wrong ones
THOUGHT = ('Okay, let me read passage [1] and the question carefully. Is this full support or only partial support, '
           'vital or okay, A or B? The answer should look like ["a", "b"] or ##final score: 0, so I will check each '
           'part and then answer in exactly the form that was asked for.')


@dataclass(frozen=True)
class ServerProfile:
    """What one kind of server does with a chat request (see the module docstring).

    :param name: the profile's name.
    :param reasoning_rules: OpenAI's parameter rules of reasoning models.
    :param reasoning_effort: ``reasoning_effort`` is taken (else refused as an unsupported parameter).
    :param thinking: where the model's thinking goes: ``None`` (it does not think, or the server keeps it),
        ``"think"`` (in the content), ``"reasoning_content"`` or ``"reasoning"`` (a field of the message).
    :param reasoning_tokens: the reasoning tokens each reply reports (``completion_tokens_details``).
    :param structured: the ``response_format`` types it takes (``json_schema``, ``json_object``).
    :param structured_status: the HTTP status of a ``response_format`` type it does not take.
    :param strict_schema: a ``json_schema`` is checked as OpenAI's strict mode checks it.
    :param fenced: the answer comes in a Markdown code fence.
    """

    name: str
    reasoning_rules: bool = False
    reasoning_effort: bool = False
    thinking: str | None = None
    reasoning_tokens: int = 0
    structured: tuple[str, ...] = ()
    structured_status: int = 400
    strict_schema: bool = False
    fenced: bool = False

    def refusal(self, body: dict) -> tuple[int, dict] | None:
        """The HTTP status and error body with which this server refuses ``body``, or None when it takes it."""
        if self.reasoning_rules:
            for param, default in DEFAULT_ONLY.items():
                if param in body and body[param] != default:
                    return 400, openai_error(
                        f"Unsupported value: '{param}' does not support {float(body[param])!r} with this model. Only "
                        f"the default ({default}) value is supported.", param, "unsupported_value")
            for param in REFUSED:
                if param in body:
                    instead = " Use 'max_completion_tokens' instead." if param == "max_tokens" else ""
                    return 400, openai_error(f"Unsupported parameter: '{param}' is not supported with this model."
                                             + instead, param, "unsupported_parameter")
        if "reasoning_effort" in body:
            if not self.reasoning_effort:
                return 400, openai_error("Unsupported parameter: 'reasoning_effort' is not supported with this "
                                         "model.", "reasoning_effort", "unsupported_parameter")
            if body["reasoning_effort"] not in REASONING_EFFORTS:
                return 400, openai_error(
                    f"Unsupported value: 'reasoning_effort' does not support {body['reasoning_effort']!r} with this "
                    f"model. Supported values are: {', '.join(repr(e) for e in REASONING_EFFORTS)}.",
                    "reasoning_effort", "unsupported_value")
        form = body.get("response_format")
        if isinstance(form, dict) and form.get("type") not in (None, "text"):
            if form.get("type") not in self.structured:
                if self.structured_status == 500:  # llama-cpp-python's server: its request validation, as a 500
                    return 500, {"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': "
                                           "('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or "
                                           "'json_object'\"}", "type": "internal_server_error", "param": None,
                                           "code": None}}
                return self.structured_status, openai_error(
                    f"Invalid parameter: 'response_format' of type '{form.get('type')}' is not supported with this "
                    "model.", "response_format", "unsupported_value")
            if form.get("type") == "json_schema" and self.strict_schema:
                problem = strict_problem(form.get("json_schema", {}).get("schema"))
                if problem:
                    name = form.get("json_schema", {}).get("name")
                    return 400, openai_error(f"Invalid schema for response_format '{name}': {problem}",
                                             "response_format", "invalid_json_schema")
        return None

    def shape(self, content: str, body: dict) -> tuple[dict, str, dict]:
        """The assistant's message, the finish reason and the usage of a reply of ``content`` to ``body``, as this
        server sends them (the thinking, a fence, a token limit that cuts)."""
        text = schema_reply(content, body) or content
        if self.fenced:
            text = f"```json\n{text}\n```"
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        think = THOUGHT if self.thinking else ""
        hidden = self.reasoning_tokens if self.thinking is None else 0
        reasoning = self.reasoning_tokens or (words(think) if think else 0)
        finish = "stop"
        if self.thinking == "think":
            text = f"<think>\n{think}\n</think>\n\n{text}"
        if limit is not None and words(text) + hidden > int(limit):
            finish = "length"
            kept = max(0, int(limit) - hidden)
            text = " ".join(text.split(" ")[:kept]) if kept else ""
        message: dict = {"role": "assistant", "content": text}
        if self.thinking in ("reasoning_content", "reasoning"):
            message[self.thinking] = think
        completion = words(text) + hidden + (words(think) if self.thinking in ("reasoning_content", "reasoning")
                                             else 0)
        usage = {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}
        if reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        return message, finish, usage


def words(text: str) -> int:
    """The tokens the emulated servers count: one a word."""
    return len(text.split())


def openai_error(message: str, param: str | None, code: str | None) -> dict:
    """An error body as OpenAI's API sends it."""
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def strict_problem(schema) -> str | None:
    """What OpenAI's strict structured output refuses in ``schema`` (the root not an object, an object without
    ``additionalProperties: false`` or with a property not required), or None."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        kind = schema.get("type") if isinstance(schema, dict) else type(schema).__name__
        return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{kind}\"'."
    todo = [schema]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        if node.get("type") == "object":
            if node.get("additionalProperties") is not False:
                return "'additionalProperties' is required to be supplied and to be false."
            missing = set(node.get("properties", {})) - set(node.get("required", []))
            if missing:
                return f"'required' is required to be supplied and to be an array including every key in " \
                       f"properties. Missing '{sorted(missing)[0]}'."
            todo += list(node.get("properties", {}).values())
        if isinstance(node.get("items"), dict):
            todo.append(node["items"])
    return None


def _schema_of(body: dict) -> dict | None:
    form = body.get("response_format")
    if not isinstance(form, dict):
        return None
    if form.get("type") == "json_schema":
        return form.get("json_schema", {}).get("schema")
    if form.get("type") == "json_object":
        return form.get("schema") or {}
    return None


def schema_reply(content: str, body: dict) -> str | None:
    """``content`` (a judge's test reply) in the form the request's ``response_format`` asks for, as a server that
    constrains decoding answers (None without one): the reply's JSON value, put in the schema's object or list,
    a label matched to the schema's enumeration, a number read off the text."""
    schema = _schema_of(body)
    if schema is None:
        return None
    try:
        value = json.loads(content)
    except ValueError:
        value = content.strip()
    return json.dumps(_conform(value, schema, content), ensure_ascii=False)


def _conform(value, schema: dict, text: str):
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties") or {}
        if isinstance(value, dict) and set(value) <= set(properties):
            return value
        if not properties:
            return {"answer": value}
        name, inner = next(iter(properties.items()))
        return {name: _conform(value, inner, text)}
    if kind == "array":
        return value if isinstance(value, list) else [value]
    if kind == "integer":
        numbers = re.findall(r"-?\d+", text)
        return int(numbers[-1]) if numbers else 0
    if "enum" in schema:
        plain = str(value).strip().strip(".").lower()
        for option in schema["enum"]:
            if str(option).lower() == plain:
                return option
        return schema["enum"][0] if plain not in ("", "none") else value
    return value


#: the profiles, by name (``TestEndpoint(profile=NAME)``, ``test-endpoint --profile NAME``)
PROFILES = {p.name: p for p in (
    ServerProfile("openai", structured=("json_schema", "json_object"), strict_schema=True),
    ServerProfile("openai-reasoning", reasoning_rules=True, reasoning_effort=True, reasoning_tokens=64,
                  structured=("json_schema", "json_object"), strict_schema=True),
    ServerProfile("think", thinking="think"),
    ServerProfile("vllm", thinking="reasoning_content", reasoning_effort=True,
                  structured=("json_schema", "json_object")),
    ServerProfile("sglang", thinking="reasoning_content", reasoning_effort=True,
                  structured=("json_schema", "json_object")),
    ServerProfile("ollama", thinking="reasoning", reasoning_effort=True, structured=("json_schema", "json_object")),
    ServerProfile("llama-cpp", structured=("json_object",), structured_status=500),
    ServerProfile("fenced", fenced=True),
)}
