"""OpenAI Batch API mode: the requests a run needs, answered by batches instead of calls.

:class:`BatchRunner` answers a set of pending requests (cache key -> request body): it writes them as
JSONL (``custom_id`` = ``STAGE:KEY``, the stage that asks and the cache key), uploads the file (``POST /v1/files``, purpose ``batch``), creates
the batch (``POST /v1/batches``, window 24 h), records the batch id and its requests in the response
cache *before* waiting, polls until the batch ends, downloads the output and error files and puts every
answer into the cache. A run that is interrupted while it waits finds the recorded batch the next time
and waits for it again instead of submitting (and paying for) the same requests twice; a recorded batch the
endpoint no longer knows (HTTP 404 when polled) is abandoned, said, and its requests are submitted again. A request that
failed inside the batch (an error line, or no line in an expired, cancelled or failed batch) is returned
as an error; it is not cached, so a later run asks it again.

At most 50,000 requests and 190 MB go into one batch (OpenAI's limits are 50,000 and 200 MB); more are
split over several batches of the same round.

Each call of the workflow (upload, creation, poll, download) that fails is asked again as a chat request is: by the
classification table and the waits of :mod:`.retry` (``Retry-After`` in full, ``x-should-retry``, the backoff) and the
client's :class:`~.options.RetryPolicy` (``max_retries``, ``max_retry_time``); what is not retried, or still fails,
stops the round with a :class:`BatchError`.
"""
from __future__ import annotations

import io
import itertools
import json
import time
from collections.abc import Callable

import openai

from pyterrier_nuggets.llm.cache import ResponseCache
from pyterrier_nuggets.llm.options import RetryPolicy
from pyterrier_nuggets.llm.reply import read_completion
from pyterrier_nuggets.llm.retry import (
    FAILED,
    FATAL,
    REFUSED,
    classify,
    describe_error,
    gave_up,
    kind_of,
    next_wait,
    retry_after,
)

MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 1024 * 1024
TERMINAL = ("completed", "failed", "expired", "cancelled")
CHAT_ENDPOINT = "/v1/chat/completions"


class BatchError(RuntimeError):
    """The Batch API could not be used (upload, creation or polling failed, or the wait timed out)."""


def reply_of(body: dict) -> dict:
    """The cache entry of a chat completion body, as the online path keeps it (:func:`~.reply.read_completion`):
    ``text``, ``reasoning``, ``usage``, ``finish_reason`` (and ``test_endpoint`` when the package's test endpoint gave
    it)."""
    reply = read_completion(body)
    reply["usage"] = {"prompt_tokens": 0, "completion_tokens": 0, **reply["usage"]}
    return reply


class BatchRunner:
    """Answers pending requests through the Batch API of ``client`` (an ``openai.OpenAI``), with ``cache``
    as the place for answers and batch ids. ``poll_interval`` seconds between polls; ``timeout`` (None: no
    limit) bounds the wait for one batch; ``retry``: the client's retry policy, for each call of the workflow;
    ``log`` receives progress lines."""

    def __init__(self, client: openai.OpenAI, cache: ResponseCache, endpoint: str, *, poll_interval: float = 30.0,
                 timeout: float | None = None, retry: RetryPolicy | None = None,
                 log: Callable[[str], None] | None = None):
        self.client = client
        self.retry = retry or RetryPolicy()
        self.cache = cache
        self.endpoint = endpoint
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.log = log or (lambda message: None)
        self.stats = dict(rounds=0, batches=0, resumed=0, forgotten=0, polls=0, requests=0, errors=0)
        self._stages: dict[str, str] = {}

    def run(self, pending: dict[str, dict], stages: dict[str, str] | None = None
            ) -> tuple[dict[str, dict], dict[str, str]]:
        """Answer ``pending`` (key -> body): ``(answers by key, errors by key)``; answers are cached. ``stages``: key ->
        the stage that asks, declared in the line's ``custom_id`` (as the header of a chat request)."""
        self._stages = stages or {}
        self.stats["rounds"] += 1
        answers: dict[str, dict] = {}
        errors: dict[str, str] = {}
        for batch_id, requests in self.cache.open_batches(self.endpoint):
            if requests.keys() & pending.keys():
                self.log(f"Batch API: resuming batch {batch_id} ({len(requests)} requests) submitted by an earlier run")
                self.stats["resumed"] += 1
                if not self._collect(batch_id, requests, answers, errors):
                    self.stats["forgotten"] += 1
                    self.log(f"Batch API: the endpoint no longer knows batch {batch_id} (HTTP 404); it is abandoned "
                             f"and its requests are submitted again")
        remaining = {k: b for k, b in pending.items() if k not in answers and k not in errors}
        for chunk in self._chunks(remaining):
            batch_id = self._submit(chunk)
            if not self._collect(batch_id, chunk, answers, errors):
                raise BatchError(f"Batch API: the endpoint {self.endpoint} does not know batch {batch_id}, which it "
                                 "has just created (HTTP 404 when polling it): it does not keep batches; run without "
                                 "--batch (batch=False)")
        return answers, errors

    def _line(self, key: str, body: dict) -> bytes:
        stage = self._stages.get(key)
        return (json.dumps({"custom_id": f"{stage}:{key}" if stage else key, "method": "POST", "url": CHAT_ENDPOINT,
                            "body": body}, ensure_ascii=False) + "\n").encode("utf-8")

    def _chunks(self, requests: dict[str, dict]) -> list[dict[str, dict]]:
        chunks: list[dict[str, dict]] = []
        size = 0
        for key, body in requests.items():
            n = len(self._line(key, body))
            if not chunks or len(chunks[-1]) >= MAX_REQUESTS or size + n > MAX_BYTES:
                chunks.append({})
                size = 0
            chunks[-1][key] = body
            size += n
        return chunks

    def _api(self, what: str, fn: Callable, *args, missing_ok: bool = False, **kwargs):
        """One API call of the batch workflow, asked again as the classification table, its waits and the retry policy
        say (:mod:`.retry`, as a chat request); with ``missing_ok``, None when the endpoint does not know the object
        (HTTP 404)."""
        started = time.monotonic()
        for attempt in itertools.count():
            try:
                return fn(*args, **kwargs)
            except openai.NotFoundError as exc:
                if missing_ok:
                    return None
                raise BatchError(f"Batch API: {what} failed: {describe_error(exc)}") from exc
            except openai.OpenAIError as exc:
                if kind_of(classify(exc), exc) in (FAILED, FATAL, REFUSED):
                    raise BatchError(f"Batch API: {what} failed: {describe_error(exc)}") from exc
                wait = next_wait(self.retry, retry_after(exc), attempt, started)
                if wait is None:
                    raise BatchError(f"Batch API: {what} failed: {gave_up(exc, attempt + 1)}") from exc
                time.sleep(wait)

    def _submit(self, requests: dict[str, dict]) -> str:
        data = b"".join(self._line(k, b) for k, b in requests.items())
        uploaded = self._api("uploading the requests", self.client.files.create,
                             file=("requests.jsonl", io.BytesIO(data), "application/jsonl"), purpose="batch")
        batch = self._api("creating the batch", self.client.batches.create, input_file_id=uploaded.id,
                          endpoint=CHAT_ENDPOINT, completion_window="24h",
                          metadata={"created_by": "pyterrier-nuggets"})
        self.cache.add_batch(batch.id, self.endpoint, requests)
        self.stats["batches"] += 1
        self.stats["requests"] += len(requests)
        self.log(f"Batch API: submitted batch {batch.id} with {len(requests)} requests")
        return batch.id

    def _collect(self, batch_id: str, requests: dict[str, dict], answers: dict, errors: dict) -> bool:
        """Wait for a batch and take its answers and errors; False when the endpoint does not know the batch (it
        was forgotten: it is closed in the cache, its requests stay unanswered so that they can be sent again)."""
        started = time.monotonic()
        status = None
        while True:
            batch = self._api(f"polling batch {batch_id}", self.client.batches.retrieve, batch_id, missing_ok=True)
            self.stats["polls"] += 1
            if batch is None:
                self.cache.close_batch(batch_id, "forgotten")
                return False
            if batch.status != status:
                status = batch.status
                counts = batch.request_counts
                done = f", {counts.completed + counts.failed}/{counts.total} done" if counts else ""
                self.log(f"Batch API: batch {batch_id} {status}{done}")
            if status in TERMINAL:
                break
            if self.timeout is not None and time.monotonic() - started > self.timeout:
                raise BatchError(f"Batch API: batch {batch_id} is still {status} after {self.timeout:g} s; it is "
                                 "recorded in the response cache: run again later to collect it without paying twice")
            time.sleep(self.poll_interval)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = self._api(f"downloading {file_id}", self.client.files.content, file_id)
                self._read(content.text, requests, answers, errors)
        why = status
        if batch.errors is not None and getattr(batch.errors, "data", None):
            why += ": " + "; ".join(str(e.message) for e in batch.errors.data[:3])
        for key in requests:
            if key not in answers and key not in errors:
                errors[key] = f"Batch API: batch {batch_id} ended {why} without an answer to this request"
        self.stats["errors"] += sum(1 for k in requests if k in errors)
        self.cache.close_batch(batch_id, status)
        return True

    def _read(self, text: str, requests: dict[str, dict], answers: dict, errors: dict) -> None:
        for line in text.splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            key = str(row.get("custom_id")).rpartition(":")[2]  # STAGE:KEY (or KEY, a batch of an older version)
            if key not in requests:
                continue
            response = row.get("response") or {}
            status = response.get("status_code")
            if row.get("error"):
                error = row["error"]
                errors[key] = f"Batch API error {error.get('code')}: {error.get('message')}"
            elif status != 200:
                message = ((response.get("body") or {}).get("error") or {}).get("message")
                errors[key] = f"Batch API: HTTP {status} inside the batch: {message}"
            else:
                try:
                    answer = reply_of(response["body"])
                except (KeyError, IndexError, TypeError) as exc:
                    errors[key] = f"Batch API: malformed answer ({type(exc).__name__}: {exc})"
                    continue
                self.cache.put(key, requests[key], answer)
                answers[key] = answer
