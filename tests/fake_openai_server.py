"""A fake OpenAI-compatible chat completions server on 127.0.0.1, for tests and benchmarks.

Standard library only (``http.server`` in a thread). It counts requests and answers each
``POST /v1/chat/completions`` with, in order of precedence:

1. the next scripted :class:`Reply` of ``script`` (a queue; e.g. a 429 with Retry-After, then a 500);
2. ``responder(body)`` if given: a string (the assistant's content) or a :class:`Reply`;
3. :func:`auto_reply`: plausible, valid output read off the prompt (deterministic): AutoNuggetizer lists,
   support labels by word overlap, cited answers copied from the passages.

``latency`` seconds are slept before every reply (requests are served concurrently), so a client's
parallelism shows in wall time.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


def support_reply(prompt: str) -> str:
    """Support judge (seed 004 Figure 1 prompt): Full Support if every word of more than 3 letters of the
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


def auto_reply(body: dict) -> str:
    """Valid output for the package's prompts, derived deterministically from the prompt."""
    prompt = body["messages"][-1]["content"]
    if len(body["messages"]) > 2:  # a re-ask: answer the first user message instead
        prompt = body["messages"][1]["content"] if body["messages"][0]["role"] == "system" else \
            body["messages"][0]["content"]
    if "Statement: " in prompt:
        return support_reply(prompt)
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


class FakeOpenAIServer:
    """Use as a context manager; ``base_url`` is the endpoint to give the client."""

    def __init__(self, latency: float = 0.0, responder: Callable[[dict], str | Reply] | None = None,
                 script: list[Reply] | None = None):
        self.latency = latency
        self.responder = responder
        self.script: deque[Reply] = deque(script or [])
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._reply(body, {k.lower(): v for k, v in self.headers.items()})
                delay = server.latency + reply.delay
                if delay:
                    time.sleep(delay)
                if reply.raw_body is not None:
                    payload = reply.raw_body
                elif reply.status == 200:
                    payload = json.dumps(completion(reply.content or "", body.get("model", "fake"))).encode()
                else:
                    payload = json.dumps({"error": {"message": f"fake error {reply.status}",
                                                    "type": "server_error"}}).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, str(v))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def _reply(self, body: dict, headers: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            scripted = self.script.popleft() if self.script else None
        if scripted is not None:
            return scripted
        if self.responder is not None:
            out = self.responder(body)
            return out if isinstance(out, Reply) else Reply(out)
        return Reply(auto_reply(body))

    @property
    def count(self) -> int:
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

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
