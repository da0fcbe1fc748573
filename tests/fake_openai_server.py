"""A fake OpenAI-compatible endpoint on 127.0.0.1, for tests and benchmarks.

Standard library only (``http.server`` in a thread). It answers ``POST /v1/chat/completions`` with, in
order of precedence:

1. the next scripted :class:`Reply` of ``script`` (a queue; e.g. a 429 with Retry-After, then a 500);
2. an injected failure: every ``fail_every``-th accepted request gets a transient 500 (``fail_status``);
   the first ``invalid_first`` replies of each conversation chosen by ``invalid_when`` are unusable
   text (:data:`INVALID`), the later ones (re-asks, re-runs) valid;
3. ``responder(body)`` if given: a string (the assistant's content) or a :class:`Reply`;
4. :func:`auto_reply`: plausible, valid output read off the prompt (deterministic): AutoNuggetizer lists,
   support labels by word overlap, cited answers copied from the passages.

Limits of a real endpoint, each optional: ``max_in_flight`` (a request arriving while that many are
being served gets 429 at once, with ``Retry-After: retry_after``), a requests quota (``quota`` requests
per ``quota_window`` seconds, sliding window; above it 429 with the time until the window frees up),
and OpenAI's rate-limit headers on every reply (``ratelimit_headers``: ``x-ratelimit-limit-requests``,
``-remaining-requests``, ``-reset-requests`` of the quota).

The Batch API: ``POST /v1/files`` (multipart upload), ``POST /v1/batches``, ``GET /v1/batches/{id}``
(``validating`` / ``in_progress`` for ``batch_polls`` polls, then ``completed``), ``GET
/v1/files/{id}/content``. Each line is answered like a chat request (without latency or limits); lines
for which ``batch_error(body)`` gives an HTTP status go to the error file instead.

``latency`` seconds are slept before every accepted reply (requests are served concurrently), so a
client's parallelism shows in wall time. ``stats`` counts what the server saw; ``GET /_fake/stats``
returns it as JSON. ``python tests/fake_openai_server.py --help`` runs one as a separate process.
"""
from __future__ import annotations

import argparse
import email.parser
import email.policy
import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INVALID = "I am not sure what you mean."  # an answer no parser of the package accepts


@dataclass
class Reply:
    """One scripted reply: ``content`` as the assistant's message, or an HTTP error / raw body."""

    content: str | None = None
    status: int = 200
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    raw_body: bytes | None = None


def completion(content: str, model: str = "fake", prompt_tokens: int = 10, completion_tokens: int = 5) -> dict:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _stable(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def _after(label: str, text: str) -> str:
    m = re.search(re.escape(label) + r"[ ]?(.*)", text)
    return m.group(1) if m else ""


def first_prompt(body: dict) -> str:
    """The first user message of a conversation (a re-ask repeats it): what identifies one unit of work."""
    return next((m["content"] for m in body["messages"] if m["role"] == "user"), "")


def support_reply(prompt: str) -> str:
    """Support judge ([support24 Figure 1] prompt): Full Support if every word of more than 3 letters of the
    statement is in the passage, Partial Support if some are, else No Support."""
    statement = prompt.split("Statement: ", 1)[1].split("\nCitation: ", 1)[0]
    passage = prompt.split("\nCitation: ", 1)[1].lower()
    words = [w.strip(".,").lower() for w in statement.split() if len(w) > 3]
    found = sum(w in passage for w in words)
    return "Full Support" if found == len(words) else "Partial Support" if found else "No Support"


def generation_reply(prompt: str) -> str:
    """Cited generator: the first sentence of passages [1] and [2], each citing its passage, and one
    uncited sentence."""
    passages = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.M)
    sentences = [f"{text.split('. ')[0].rstrip('.')} [{number}]." for number, text in passages[:2]]
    return " ".join(sentences + ["That is all I know."])


def _covered(text: str, passage: str) -> tuple[int, int]:
    words = [w.strip(".,?!:;\"'").lower() for w in text.split() if len(w) > 3]
    return sum(w in passage for w in words), len(words)


def subnarrative_reply(prompt: str) -> str:
    """UMBRELA's sub-narrative prompt: a sub-narrative counts when every word of more than 3 letters is in the
    passage; 0 covered -> 1 if a narrative word is there else 0, 1 -> 2, 2-3 -> 3, 4+ -> 4."""
    passage = _after("Passage:", prompt).lower()
    subs = json.loads(_after("Sub-narratives:", prompt) or "[]")
    covered = sum(1 for sub in subs if _covered(sub, passage)[0] == _covered(sub, passage)[1] > 0)
    if covered == 0:
        return f"##final score: {1 if _covered(_after('Narrative:', prompt), passage)[0] else 0}"
    return f"##final score: {2 if covered == 1 else 3 if covered <= 3 else 4}"


def rubric_reply(prompt: str) -> str:
    """Rubric grading: satisfied when every word of more than 3 letters of the criterion is in the answer,
    partially_satisfied when some are, else not_satisfied."""
    answer = _after("Answer:", prompt).lower()
    verdicts = []
    for criterion in json.loads(_after("Criteria:", prompt) or "[]"):
        found, total = _covered(criterion, answer)
        verdicts.append("satisfied" if total and found == total else "partially_satisfied" if found
                        else "not_satisfied")
    return json.dumps(verdicts)


def pairwise_reply(prompt: str) -> str:
    """Pairwise battle: the answer holding more of the question's words of more than 3 letters wins; equal is a
    tie."""
    question = _after("Question:", prompt).split("\n")[0]
    counts = []
    for label in ("A", "B"):
        text = prompt.split(f"[Answer {label}]", 1)[1].split(f"[End of answer {label}]", 1)[0].lower()
        counts.append(_covered(question, text)[0])
    return "[[A]]" if counts[0] > counts[1] else "[[B]]" if counts[1] > counts[0] else "[[Tie]]"


def auto_reply(body: dict) -> str:
    """Valid output for the package's prompts, derived deterministically from the prompt."""
    prompt = body["messages"][-1]["content"]
    if len(body["messages"]) > 2:  # a re-ask: answer the first user message instead
        prompt = first_prompt(body)
    if "[[Tie]]" in prompt:  # a pairwise battle of the arena
        return pairwise_reply(prompt)
    if "Statement: " in prompt:
        level = support_reply(prompt)
        if "“Not Relevant”" in prompt:  # BioGen relations (prompts/biogen_relation.txt) from the same overlap
            return {"Full Support": "Supports", "Partial Support": "Neutral", "No Support": "Not Relevant"}[level]
        return level
    if "Sub-narratives:" in prompt:  # UMBRELA 2025/2026: how many sub-narratives the passage covers, 0-4
        return subnarrative_reply(prompt)
    if "Verdicts:" in prompt:  # rubric grading
        return rubric_reply(prompt)
    if "##final score" in prompt:  # UMBRELA relevance: the query words found in the passage, 0-3
        query = {w for w in _after("Query:", prompt).split("\n")[0].lower().split() if len(w) > 3}
        passage = _after("Passage:", prompt).lower()
        return f"##final score: {min(3, sum(w in passage for w in query))}"
    if "Passages:" in prompt:
        return generation_reply(prompt)
    if "Updated Nugget List:" in prompt:
        nuggets = json.loads(_after("Initial Nugget List:", prompt) or "[]")
        context = prompt.split("Context:", 1)[1].split("Search Query:", 1)[0]
        for line in context.strip().splitlines():
            words = re.sub(r"^\[\d+\]\s*", "", line).split()[:6]
            nugget = " ".join(words)
            if nugget and nugget not in nuggets:
                nuggets.append(nugget)
        return json.dumps(nuggets[:30])
    if prompt == "Reply with the single word OK.":  # check-endpoint's question (LLMClient.probe)
        return "OK"
    count = int(re.search(r"label each of the (\d+) nuggets", prompt).group(1))
    nuggets = json.loads(_after("Nugget List:", prompt) or "[]")
    if "vital or okay" in prompt:
        return json.dumps(["vital" if _stable(n) % 2 == 0 else "okay" for n in nuggets[:count]])
    passage = _after("Passage:", prompt).lower()
    three = "partial_support" in prompt
    labels = []
    for n in nuggets[:count]:
        words = [w for w in n.lower().split() if len(w) > 3]
        found = sum(w in passage for w in words)
        if words and found == len(words):
            labels.append("support")
        elif three and found:
            labels.append("partial_support")
        else:
            labels.append("not_support")
    return json.dumps(labels)


def _multipart(content_type: str, data: bytes) -> dict[str, tuple[str | None, bytes]]:
    """Fields of a multipart/form-data body: name -> (filename, content)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + data)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_payload(decode=True))
    return out


class FakeOpenAIServer:
    """Use as a context manager; ``base_url`` is the endpoint to give the client."""

    def __init__(self, latency: float = 0.0, responder: Callable[[dict], str | Reply] | None = None,
                 script: list[Reply] | None = None, *, max_in_flight: int | None = None, retry_after: float = 1.0,
                 quota: int | None = None, quota_window: float = 60.0, ratelimit_headers: bool = False,
                 fail_every: int | None = None, fail_status: int = 500, invalid_first: int = 0,
                 invalid_when: Callable[[dict], bool] | None = None, batch_polls: int = 2,
                 batch_error: Callable[[dict], int | None] | None = None, port: int = 0):
        self.latency = latency
        self.responder = responder
        self.script: deque[Reply] = deque(script or [])
        self.max_in_flight = max_in_flight
        self.retry_after = retry_after
        self.quota, self.quota_window = quota, quota_window
        self.ratelimit_headers = ratelimit_headers
        self.fail_every, self.fail_status = fail_every, fail_status
        self.invalid_first, self.invalid_when = invalid_first, invalid_when
        self.batch_polls, self.batch_error = batch_polls, batch_error
        self.requests: list[dict] = []  # every chat request body, rejected ones included
        self.headers: list[dict] = []
        self.in_flight_seen: list[int] = []  # requests in flight when each chat request arrived
        self.stats = dict(chat_requests=0, accepted=0, rejected=0, quota_rejected=0, injected_errors=0,
                          invalid_replies=0, peak_in_flight=0, uploads=0, batches=0, polls=0, batch_requests=0,
                          batch_errors=0)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self._in_flight = 0
        self._window: deque[float] = deque()
        self._asked: dict[str, int] = {}  # first prompt -> times answered (for invalid_first)
        self._lock = threading.Lock()
        self._connections: set = set()  # the open client connections (kill() drops them)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else a reply's body waits for the ACK of its headers (40 ms)

            def log_message(self, *args):  # keep test output quiet
                pass

            def setup(self):
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self):
                with server._lock:
                    server._connections.discard(self.connection)
                super().finish()

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                path = self.path.split("?")[0]
                if path.endswith("/chat/completions"):
                    server._chat(self, json.loads(data or b"{}"), headers)
                elif path.endswith("/files"):
                    self._json(200, server._upload(headers.get("content-type", ""), data))
                elif path.endswith("/batches"):
                    self._json(200, server._create_batch(json.loads(data or b"{}")))
                else:
                    self._json(404, {"error": {"message": f"not found: POST {path}"}})

            def do_GET(self):
                path = self.path.split("?")[0]
                m = re.search(r"/batches/([^/]+)$", path)
                f = re.search(r"/files/([^/]+)/content$", path)
                if m and m.group(1) in server.batches:
                    self._json(200, server._poll(m.group(1)))
                elif f and f.group(1) in server.files:
                    self._send(200, server.files[f.group(1)], {"content-type": "application/octet-stream"})
                elif path == "/_fake/stats":
                    with server._lock:
                        self._json(200, dict(server.stats))
                else:
                    self._json(404, {"error": {"message": f"not found: GET {path}"}})

            def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
                self._send(status, json.dumps(payload).encode(), {"content-type": "application/json",
                                                                  **(headers or {})})

            def _send(self, status: int, payload: bytes, headers: dict) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-length", str(len(payload)))
                    for k, v in headers.items():
                        self.send_header(k, str(v))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client timed out and left, or the server was killed
                    pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default 5 drops connections opened at once (a 1 s SYN retry)
            daemon_threads = True

        self._httpd = Server(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    # ------------------------------------------------------------------------------------ chat

    def _chat(self, handler, body: dict, headers: dict) -> None:
        now = time.monotonic()
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.in_flight_seen.append(self._in_flight)
            self.stats["chat_requests"] += 1
            rejected = self._limit(now)
            if rejected is None:
                self._in_flight += 1
                self.stats["peak_in_flight"] = max(self.stats["peak_in_flight"], self._in_flight)
                self.stats["accepted"] += 1
                scripted = self.script.popleft() if self.script else None
                injected = (self.fail_every is not None and self.stats["accepted"] % self.fail_every == 0)
                if injected:
                    self.stats["injected_errors"] += 1
            rate_headers = self._rate_headers(now)
        if rejected is not None:
            handler._json(429, {"error": {"message": rejected[0], "type": "rate_limit_exceeded"}},
                          {"retry-after": f"{rejected[1]:g}", **rate_headers})
            return
        try:
            if scripted is not None:
                reply = scripted
            elif injected:
                reply = Reply(status=self.fail_status)
            else:
                reply = self._answer(body)
            delay = self.latency + reply.delay
            if delay:
                time.sleep(delay)
        finally:
            with self._lock:  # done before the reply leaves, as a server's own limiter counts
                self._in_flight -= 1
        if reply.raw_body is not None:
            handler._send(reply.status, reply.raw_body, {"content-type": "application/json", **reply.headers})
        elif reply.status == 200:
            handler._json(200, completion(reply.content or "", body.get("model", "fake")),
                          {**rate_headers, **reply.headers})
        else:
            handler._json(reply.status, {"error": {"message": f"fake error {reply.status}", "type": "server_error"}},
                          {**rate_headers, **reply.headers})

    def _limit(self, now: float) -> tuple[str, float] | None:
        """(message, retry-after seconds) when this request is over a limit, else None (lock held)."""
        if self.max_in_flight is not None and self._in_flight >= self.max_in_flight:
            self.stats["rejected"] += 1
            return f"more than {self.max_in_flight} requests in flight", self.retry_after
        if self.quota is not None:
            while self._window and self._window[0] <= now - self.quota_window:
                self._window.popleft()
            if len(self._window) >= self.quota:
                self.stats["quota_rejected"] += 1
                return (f"quota of {self.quota} requests per {self.quota_window:g}s exceeded",
                        round(self._window[0] + self.quota_window - now, 3))
            self._window.append(now)
        return None

    def _rate_headers(self, now: float) -> dict:
        if not self.ratelimit_headers or self.quota is None:
            return {}
        reset = self._window[0] + self.quota_window - now if self._window else 0.0
        return {"x-ratelimit-limit-requests": self.quota,
                "x-ratelimit-remaining-requests": max(0, self.quota - len(self._window)),
                "x-ratelimit-reset-requests": f"{max(0.0, reset):.3f}s"}

    def _answer(self, body: dict) -> Reply:
        """The reply to one request, without limits (used by chat requests and batch lines alike)."""
        if self.invalid_first and (self.invalid_when is None or self.invalid_when(body)):
            root = first_prompt(body)
            with self._lock:
                self._asked[root] = self._asked.get(root, 0) + 1
                invalid = self._asked[root] <= self.invalid_first
                if invalid:
                    self.stats["invalid_replies"] += 1
            if invalid:
                return Reply(INVALID)
        if self.responder is not None:
            out = self.responder(body)
            return out if isinstance(out, Reply) else Reply(out)
        return Reply(auto_reply(body))

    # ------------------------------------------------------------------------------- Batch API

    def _upload(self, content_type: str, data: bytes) -> dict:
        fields = _multipart(content_type, data)
        filename, content = fields.get("file", (None, b""))
        with self._lock:
            self.stats["uploads"] += 1
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = content
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": filename or "input.jsonl", "purpose": fields.get("purpose", (None, b""))[1].decode(),
                "status": "processed"}

    def _create_batch(self, request: dict) -> dict:
        with self._lock:
            self.stats["batches"] += 1
            batch_id = f"batch-{len(self.batches) + 1}"
            lines = self.files[request["input_file_id"]].decode().splitlines()
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": request["endpoint"], "errors": None,
                "input_file_id": request["input_file_id"], "completion_window": request["completion_window"],
                "status": "validating", "output_file_id": None, "error_file_id": None,
                "created_at": int(time.time()), "metadata": request.get("metadata"),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0}, "_polls": 0}
            return self._public(batch_id)

    def _public(self, batch_id: str) -> dict:
        return {k: v for k, v in self.batches[batch_id].items() if not k.startswith("_")}

    def _poll(self, batch_id: str) -> dict:
        with self._lock:
            self.stats["polls"] += 1
            batch = self.batches[batch_id]
            if batch["status"] in ("completed", "failed", "expired", "cancelled"):
                return self._public(batch_id)
            batch["_polls"] += 1
            if batch["_polls"] < self.batch_polls:
                batch["status"] = "in_progress"
                return self._public(batch_id)
            lines = self.files[batch["input_file_id"]].decode().splitlines()
        output, errors = [], []
        for i, line in enumerate(lines):
            request = json.loads(line)
            status = self.batch_error(request["body"]) if self.batch_error else None
            if status:
                errors.append({"id": f"batch_req_{i}", "custom_id": request["custom_id"], "error": None,
                               "response": {"status_code": status, "request_id": f"req_{i}", "body": {
                                   "error": {"message": f"fake batch error {status}", "type": "server_error"}}}})
                continue
            reply = self._answer(request["body"])
            output.append({"id": f"batch_req_{i}", "custom_id": request["custom_id"], "error": None,
                           "response": {"status_code": 200, "request_id": f"req_{i}",
                                        "body": completion(reply.content or "", request["body"].get("model", "fake"))}})
        with self._lock:
            self.stats["batch_requests"] += len(lines)
            self.stats["batch_errors"] += len(errors)
            for kind, rows in (("output_file_id", output), ("error_file_id", errors)):
                if rows:
                    file_id = f"file-{len(self.files) + 1}"
                    self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                    batch[kind] = file_id
            batch["status"] = "completed"
            batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(errors)}
            return self._public(batch_id)

    # -------------------------------------------------------------------------------- lifecycle

    @property
    def count(self) -> int:
        """Chat requests received (rejected ones included)."""
        with self._lock:
            return len(self.requests)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def kill(self) -> None:
        """Go away as a crashed server does: stop accepting connections (new ones are refused) and drop every open
        one, requests in flight included (their clients see the connection reset)."""
        self.stop()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the fake OpenAI-compatible endpoint until interrupted "
                                     "(prints its base URL).")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--max-in-flight", type=int)
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--quota", type=int, help="requests per --quota-window seconds")
    parser.add_argument("--quota-window", type=float, default=60.0)
    parser.add_argument("--ratelimit-headers", action="store_true")
    parser.add_argument("--batch-polls", type=int, default=2)
    args = parser.parse_args()
    with FakeOpenAIServer(latency=args.latency, max_in_flight=args.max_in_flight, retry_after=args.retry_after,
                          quota=args.quota, quota_window=args.quota_window, ratelimit_headers=args.ratelimit_headers,
                          batch_polls=args.batch_polls, port=args.port) as server:
        print(server.base_url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
