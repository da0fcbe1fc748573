"""The package's test endpoint: a deterministic OpenAI-compatible chat endpoint on 127.0.0.1, for trying the LLM
commands and for the tests (``pyterrier-nuggets test-endpoint --port 0``, or :class:`TestEndpoint` in Python). It
runs no model: its replies are deterministic and valid, read off each judge's prompt by the judge's own
``test_reply`` (:mod:`pyterrier_nuggets.judges.test_replies`), chosen by the stage the client declares beside each
request (the header ``X-Pyterrier-Nuggets-Stage``, :data:`~pyterrier_nuggets.llm.config.STAGE_HEADER`; never part of
the request body or its cache key). It names itself in every reply (``system_fingerprint``), so every table made
with it says that it is a test endpoint.

Standard library only (``http.server`` in a thread). As a real server does, it answers only under ``/v1`` (a base
URL without it gets HTTP 404, OpenAI's "Invalid URL" body) and, when given ``models``, only those model names (another
gets HTTP 404 with OpenAI's ``model_not_found`` body; ``GET /v1/models`` lists them): so a wrong address or model
name can be rehearsed. It answers ``POST /v1/chat/completions`` with, in order of precedence:

1. the next scripted :class:`Reply` of ``script`` (a queue; e.g. a 429 with Retry-After, then a 500, or a reply
   held until the test sets an event), sent as it is;
2. the refusal of the server ``profile`` emulates (:mod:`.profiles`: a parameter that server refuses, with its error
   body), whose replies below are then shaped as that server sends them (the thinking, a fence, the usage);
3. an injected failure: every ``fail_every``-th accepted request gets a transient 500 (``fail_status``);
   the first ``invalid_first`` replies of each conversation chosen by ``invalid_when`` are unusable
   text (:data:`INVALID`), the later ones (re-asks, re-runs) valid;
4. ``responder(body)`` if given: a string (the assistant's content), a :class:`Reply`, or None for 5;
5. :func:`stage_reply`: the declared stage's reply (``probe``: ``OK``; no stage: ``OK``; a stage no judge declares:
   HTTP 400 naming it).

Limits of a real endpoint, each optional: ``max_in_flight`` (a request arriving while that many are
being served gets 429 at once, with ``Retry-After: retry_after``), a requests quota (``quota`` requests
per ``quota_window`` seconds, sliding window; above it 429 with the time until the window frees up),
and OpenAI's rate-limit headers on every reply (``ratelimit_headers``: ``x-ratelimit-limit-requests``,
``-remaining-requests``, ``-reset-requests`` of the quota).

The Batch API: ``POST /v1/files`` (multipart upload), ``POST /v1/batches``, ``GET /v1/batches/{id}``
(``validating`` / ``in_progress`` for ``batch_polls`` polls, then ``completed``), ``GET
/v1/files/{id}/content``. Each line is answered like a chat request (without latency or limits; its stage is the
part of its ``custom_id`` before the last ``:``); lines for which ``batch_error(body)`` gives an HTTP status go to
the error file instead. ``batch_script`` replies, in order, to the Batch API's own requests (uploads, batch creations,
polls, downloads) before they are served: a 429 with ``Retry-After``, a 500, an ``x-should-retry`` header.

``latency`` seconds are slept before every accepted reply (requests are served concurrently), so a
client's parallelism shows in wall time. ``hold_until`` holds every reply until that many requests are in flight
at once (a barrier, not a clock: the tests of how many requests a client keeps in flight), then lets them all go;
several levels are barriers one after the other (the replies of the second wave are held until the second level is
in flight, ...).
The server speaks HTTP/1.1 with keep-alive (a client's connection serves request after request) and listens with a
backlog of :data:`BACKLOG` (the standard library's 5 drops the connections of a wide client opened at once).
``stats`` counts what the server saw (:meth:`TestEndpoint.wait_for` waits until a condition on it holds, a barrier
for a responder); ``GET /_fake/stats`` returns it as JSON. :meth:`TestEndpoint.kill` goes away as a crashed server
does.
"""
from __future__ import annotations

import email.parser
import email.policy
import json
import math
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.llm.config import STAGE_HEADER, TEST_ENDPOINT_FINGERPRINT
from pyterrier_nuggets.ports import PortInUse, in_use
from pyterrier_nuggets.testing.profiles import PROFILES, ServerProfile

INVALID = "I am not sure what you mean."  # an answer no parser of the package accepts
BACKLOG = 2048  # connections waiting to be accepted: above the widest client (256 in flight per process, several)
API_PREFIX = "/v1"  # the paths a real OpenAI-compatible server answers under (Azure's end in /openai/v1)


@dataclass
class Reply:
    """One scripted reply: ``content`` as the assistant's message, or an HTTP error / raw body.

    :param content: the assistant's message.
    :param status: the HTTP status (200: a chat completion of ``content``; else an error).
    :param headers: more reply headers (e.g. ``{"retry-after": "1"}``).
    :param delay: seconds slept before replying (besides the endpoint's ``latency``).
    :param raw_body: the reply's body as it is (a malformed reply).
    :param message: the message of an HTTP error.
    :param hold: an event the reply waits for before it is sent (a reply that comes too late, without a clock: the
        test sets it when it ends; at most the endpoint's ``hold_timeout``, counted in ``stats["hold_timeouts"]``).
    """

    content: str | None = None
    status: int = 200
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    raw_body: bytes | None = None
    message: str | None = None  # the error message of an HTTP error
    hold: threading.Event | None = None


def completion(content: str, model: str = "fake", prompt_tokens: int = 10, completion_tokens: int = 5, *,
               message: dict | None = None, finish_reason: str = "stop", usage: dict | None = None) -> dict:
    """A chat completion body as the test endpoint sends it (it names itself in ``system_fingerprint``).

    :param content: the assistant's message.
    :param model: the model named in the reply.
    :param prompt_tokens: the usage it reports.
    :param completion_tokens: the usage it reports.
    :param message: the whole assistant message instead (a server profile's: its thinking, a fence).
    :param finish_reason: why the reply ended (``"length"``: cut at the token limit).
    :param usage: the whole usage instead (a server profile's: reasoning tokens).
    """
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
        "system_fingerprint": TEST_ENDPOINT_FINGERPRINT,
        "choices": [{"index": 0, "message": message or {"role": "assistant", "content": content},
                     "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                           "total_tokens": prompt_tokens + completion_tokens},
    }


def invalid_url(method: str, path: str) -> dict:
    """OpenAI's error body for a path it does not serve (HTTP 404), e.g. a base URL without ``/v1``.

    :param method: ``POST`` or ``GET``.
    :param path: the path asked for.
    """
    return {"error": {"message": f"Invalid URL ({method} {path})", "type": "invalid_request_error", "param": None,
                      "code": None}}


def model_not_found(model: object) -> dict:
    """OpenAI's error body for a model name it does not serve (HTTP 404).

    :param model: the name asked for.
    """
    return {"error": {"message": f"The model `{model}` does not exist or you do not have access to it.",
                      "type": "invalid_request_error", "param": None, "code": "model_not_found"}}


def first_prompt(body: dict) -> str:
    """The first user message of a conversation (a re-ask repeats it): what identifies one unit of work.

    :param body: a chat request.
    """
    return next((m["content"] for m in body["messages"] if m["role"] == "user"), "")


PROBE_STAGE = "probe"  # check-endpoint's question (LLMClient.probe)


_DECLARED: dict[str, Callable[[str], str]] = {}


def declared_replies() -> dict[str, Callable[[str], str]]:
    """stage -> the ``test_reply`` its judge declares: every judge of the package, the judges of the steps of the
    registry (:data:`pyterrier_nuggets.steps.STEPS`, imported for it), and their subclasses. Looked up again when a
    stage is not there yet (a step registered, or a judge defined, after the first request)."""
    import pyterrier_nuggets.judges  # noqa: F401  (the judges, and the LLM matcher: their classes declare replies)
    import pyterrier_nuggets.matchers.llm  # noqa: F401
    from pyterrier_nuggets import steps
    from pyterrier_nuggets.judges.base import LLMJudge
    for step in list(steps.STEPS.values()):
        steps.judge_class(step)
    out: dict[str, Callable[[str], str]] = {}
    todo = list(LLMJudge.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.test_reply is not None and cls.step:
            out.setdefault(cls.step, cls.test_reply)
    _DECLARED.clear()
    _DECLARED.update(out)
    return out


def stage_reply(body: dict, stage: str | None) -> Reply:
    """The test endpoint's reply to a chat request of the declared ``stage``: its judge's ``test_reply`` to the
    first user message (a re-ask is answered as the question it re-asks); ``OK`` to check-endpoint's probe and to a
    request that declares no stage; HTTP 400 for a stage that no judge declares.

    :param body: the chat request.
    :param stage: the stage it declares (``X-Pyterrier-Nuggets-Stage``), or None.
    """
    if stage is None or stage == PROBE_STAGE:
        return Reply("OK")
    reply = _DECLARED.get(stage) or declared_replies().get(stage)
    if reply is None:
        return Reply(status=400, message=f"the test endpoint has no reply for the stage {stage!r}: its judge declares "
                                         "no test_reply (pyterrier_nuggets/judges/test_replies.py)")
    return Reply(reply(first_prompt(body)))


def _multipart(content_type: str, data: bytes) -> dict[str, tuple[str | None, bytes]]:
    """Fields of a multipart/form-data body: name -> (filename, content)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + data)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_payload(decode=True))
    return out


def _check_options(latency: float, retry_after: float, quota_window: float, port: int, max_in_flight: int | None,
                   quota: int | None) -> None:
    """The endpoint's numbers, refused where they enter (a negative or NaN latency used to crash every request)."""
    for name, value, lowest in (("latency", latency, 0), ("retry_after", retry_after, None),
                                ("quota_window", quota_window, None)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
                (value < 0 if lowest == 0 else value <= 0):
            raise InvalidInput(f"TestEndpoint({name}={value!r}): seconds, a finite number "
                               f"{'of 0 or more' if lowest == 0 else 'above 0'}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidInput(f"TestEndpoint(port={port!r}): a port is 0 to 65535 (0: any free one)")
    for name, value in (("max_in_flight", max_in_flight), ("quota", quota)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InvalidInput(f"TestEndpoint({name}={value!r}): a whole number of 1 or more, or None")


class TestEndpoint:
    """The test endpoint (see the module docstring). Use as a context manager; ``base_url`` is the endpoint to give
    the client.

    :param latency: seconds slept before every accepted reply.
    :param responder: ``responder(body)``: the reply to a request (a text, a :class:`Reply`, or None for the stage's).
    :param script: replies given in order before any other.
    :param max_in_flight: HTTP 429 (``Retry-After: retry_after``) to a request arriving while that many are served.
    :param retry_after: the ``Retry-After`` of those 429 replies, in seconds.
    :param quota: at most that many requests per ``quota_window`` seconds (sliding window; above it HTTP 429).
    :param quota_window: the window of ``quota``, in seconds.
    :param ratelimit_headers: OpenAI's ``x-ratelimit-*`` headers of the quota on every reply.
    :param fail_every: every that-many-th accepted request gets HTTP ``fail_status``.
    :param fail_status: the status of those injected failures (default 500).
    :param invalid_first: the first that many replies of each conversation chosen by ``invalid_when`` are
        :data:`INVALID`.
    :param invalid_when: ``invalid_when(body)``: which conversations (default all).
    :param batch_polls: polls of a batch before it completes.
    :param batch_error: ``batch_error(body)``: an HTTP status for a batch line that fails, or None.
    :param batch_script: replies given in order to the Batch API's requests (``POST /v1/files``, ``POST /v1/batches``,
        ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``) instead of serving them: HTTP errors (a
        :class:`Reply` with ``status`` and ``headers``), counted in ``stats["batch_scripted"]``.
    :param hold_until: hold every accepted reply until that many requests are in flight at once, then release them
        all; a sequence of levels: barriers one after the other (requests after the last are not held).
        ``stats["hold_timeouts"]`` counts replies let go after ``hold_timeout`` seconds without their barrier being
        reached (a client that never had that many in flight).
    :param hold_timeout: the longest a reply is held (a bound on a failing test, not a measurement).
    :param port: the port on 127.0.0.1 (0: any free one); a port in use is refused (:class:`~pyterrier_nuggets.ports.
        PortInUse`).
    :param models: the model names it serves (another gets HTTP 404, ``model_not_found``, as from a real server);
        ``None`` (the default): any name.
    :param profile: a server to emulate (:data:`~.profiles.PROFILES`: ``"openai-reasoning"``, ``"think"``, ...; or a
        :class:`~.profiles.ServerProfile`): the parameters it refuses, with its error body, where the thinking goes,
        the structured output it takes, its usage. Scripted replies are sent as they are.

    Examples::

        with TestEndpoint(latency=0.05, max_in_flight=8) as endpoint:
            llm = LLMClient(model="test", base_url=endpoint.base_url, cache=None)
    """

    __test__ = False  # not a test class (pytest collects classes named Test*)

    def __init__(self, latency: float = 0.0, responder: Callable[[dict], str | Reply] | None = None,
                 script: list[Reply] | None = None, *, max_in_flight: int | None = None, retry_after: float = 1.0,
                 quota: int | None = None, quota_window: float = 60.0, ratelimit_headers: bool = False,
                 fail_every: int | None = None, fail_status: int = 500, invalid_first: int = 0,
                 invalid_when: Callable[[dict], bool] | None = None, batch_polls: int = 2,
                 batch_error: Callable[[dict], int | None] | None = None, batch_script: list[Reply] | None = None,
                 hold_until: int | Sequence[int] = (),
                 hold_timeout: float = 60.0, port: int = 0, profile: str | ServerProfile | None = None,
                 models: Sequence[str] | None = None):
        _check_options(latency=latency, retry_after=retry_after, quota_window=quota_window, port=port,
                       max_in_flight=max_in_flight, quota=quota)
        if isinstance(profile, str):
            if profile not in PROFILES:
                raise InvalidInput(f"no test endpoint profile {profile!r}: one of {', '.join(PROFILES)}")
            profile = PROFILES[profile]
        self.profile = profile
        if isinstance(models, str) or (models is not None and not all(isinstance(m, str) and m for m in models)):
            raise InvalidInput(f"TestEndpoint(models={models!r}): a list of model names, or None for any name")
        self.models = None if models is None else tuple(models)
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
        self.batch_script: deque[Reply] = deque(batch_script or [])
        self.hold_until = (hold_until,) if isinstance(hold_until, int) else tuple(hold_until)
        self.hold_timeout = hold_timeout
        self._barriers = [threading.Event() for _ in self.hold_until]  # set when its level of hold_until is reached
        self._barrier = 0  # the barrier the next accepted request waits for
        self.requests: list[dict] = []  # every chat request body, rejected ones included
        self.headers: list[dict] = []
        self.paths: list[str] = []  # the path of each (e.g. /openai/v1/chat/completions: Azure's)
        self.in_flight_seen: list[int] = []  # requests in flight when each chat request arrived
        self.stats = dict(chat_requests=0, accepted=0, rejected=0, quota_rejected=0, injected_errors=0,
                          invalid_replies=0, peak_in_flight=0, uploads=0, batches=0, polls=0, batch_requests=0,
                          batch_errors=0, batch_scripted=0, hold_timeouts=0, unknown_model=0)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self._in_flight = 0
        self._window: deque[float] = deque()
        self._asked: dict[str, int] = {}  # first prompt -> times answered (for invalid_first)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified when a chat request arrives and when it ends
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
                if path.endswith(API_PREFIX + "/chat/completions"):
                    server._chat(self, json.loads(data or b"{}"), headers, path)
                elif path.endswith((API_PREFIX + "/files", API_PREFIX + "/batches")) and self._scripted():
                    pass
                elif path.endswith(API_PREFIX + "/files"):
                    self._json(200, server._upload(headers.get("content-type", ""), data))
                elif path.endswith(API_PREFIX + "/batches"):
                    self._json(200, server._create_batch(json.loads(data or b"{}")))
                else:
                    self._json(404, invalid_url("POST", path))

            def do_GET(self):
                path = self.path.split("?")[0]
                m = re.search(r"/batches/([^/]+)$", path)
                f = re.search(r"/files/([^/]+)/content$", path)
                if (m or f) and self._scripted():
                    pass
                elif m and m.group(1) in server.batches:
                    self._json(200, server._poll(m.group(1)))
                elif f and f.group(1) in server.files:
                    self._send(200, server.files[f.group(1)], {"content-type": "application/octet-stream"})
                elif path == "/_fake/stats":
                    with server._lock:
                        self._json(200, dict(server.stats, in_flight=server._in_flight))
                elif path.endswith(API_PREFIX + "/models"):
                    self._json(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                                 "owned_by": "pyterrier-nuggets-test-endpoint"}
                                                                for m in server.models or ()]})
                else:
                    self._json(404, invalid_url("GET", path))

            def _scripted(self) -> bool:
                """The next reply of ``batch_script`` sent to this Batch API request, if there is one."""
                with server._lock:
                    reply = server.batch_script.popleft() if server.batch_script else None
                    if reply is not None:
                        server.stats["batch_scripted"] += 1
                if reply is None:
                    return False
                self._json(reply.status, {"error": {"message": reply.message or f"test endpoint error {reply.status}",
                                                    "type": "server_error" if reply.status >= 500 else "invalid_request"}},
                           reply.headers)
                return True

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
            request_queue_size = BACKLOG  # the default 5 drops connections opened at once (a 1 s SYN retry)
            daemon_threads = True

            def handle_error(self, request, client_address):
                if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that went away: nothing to say
                    super().handle_error(request, client_address)

        try:
            self._httpd = Server(("127.0.0.1", port), Handler)
        except OSError as e:
            if in_use(e):
                raise PortInUse("127.0.0.1", port, "the test endpoint") from None
            raise
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    # ------------------------------------------------------------------------------------ chat

    def serves(self, model: object) -> bool:
        """Whether the endpoint serves ``model`` (any name without ``models``).

        :param model: the ``model`` of a request.
        """
        return self.models is None or model in self.models

    def _seen(self, body: dict, headers: dict, path: str) -> None:
        """A chat request recorded as it arrived (under the endpoint's lock)."""
        self.requests.append(body)
        self.headers.append(headers)
        self.paths.append(path)
        self.in_flight_seen.append(self._in_flight)
        self.stats["chat_requests"] += 1

    def _chat(self, handler, body: dict, headers: dict, path: str = "/v1/chat/completions") -> None:
        if not self.serves(body.get("model")):
            with self._lock:
                self._seen(body, headers, path)
                self.stats["unknown_model"] += 1
                self._changed.notify_all()
            handler._json(404, model_not_found(body.get("model")))
            return
        now = time.monotonic()
        with self._lock:
            self._seen(body, headers, path)
            rejected = self._limit(now)
            if rejected is None:
                self._in_flight += 1
                self.stats["peak_in_flight"] = max(self.stats["peak_in_flight"], self._in_flight)
                self.stats["accepted"] += 1
                barrier = self._barriers[self._barrier] if self._barrier < len(self._barriers) else None
                if barrier is not None and self._in_flight >= self.hold_until[self._barrier]:
                    barrier.set()
                    self._barrier += 1
                scripted = self.script.popleft() if self.script else None
                injected = (self.fail_every is not None and self.stats["accepted"] % self.fail_every == 0)
                if injected:
                    self.stats["injected_errors"] += 1
            rate_headers = self._rate_headers(now)
            self._changed.notify_all()
        if rejected is not None:
            handler._json(429, {"error": {"message": rejected[0], "type": "rate_limit_exceeded"}},
                          {"retry-after": f"{rejected[1]:g}", **rate_headers})
            return
        try:
            for event in (barrier, scripted.hold if scripted is not None else None):
                if event is not None and not event.wait(self.hold_timeout):
                    with self._lock:
                        self.stats["hold_timeouts"] += 1
            refused = self.profile.refusal(body) if self.profile is not None and scripted is None else None
            if scripted is not None:
                reply = scripted
            elif refused is not None:
                reply = Reply(status=refused[0], raw_body=json.dumps(refused[1]).encode())
            elif injected:
                reply = Reply(status=self.fail_status)
            else:
                reply = self._answer(body, headers.get(STAGE_HEADER.lower()))
            delay = self.latency + reply.delay
            if delay:
                time.sleep(delay)
        finally:
            with self._lock:  # done before the reply leaves, as a server's own limiter counts
                self._in_flight -= 1
                self._changed.notify_all()
        if reply.raw_body is not None:
            handler._send(reply.status, reply.raw_body, {"content-type": "application/json", **reply.headers})
        elif reply.status == 200:
            handler._json(200, self._completion(reply.content or "", body, shaped=scripted is None),
                          {**rate_headers, **reply.headers})
        else:
            handler._json(reply.status, {"error": {"message": reply.message or f"test endpoint error {reply.status}",
                                                   "type": "server_error" if reply.status >= 500 else "invalid_request"}},
                          {**rate_headers, **reply.headers})

    def _completion(self, content: str, body: dict, shaped: bool = True) -> dict:
        """The chat completion of a reply of ``content`` to ``body``: as the server :attr:`profile` emulates sends it
        (``shaped``), or as it is."""
        if self.profile is None or not shaped:
            return completion(content, body.get("model", "fake"))
        message, finish, usage = self.profile.shape(content, body)
        return completion(content, body.get("model", "fake"), message=message, finish_reason=finish, usage=usage)

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

    def _answer(self, body: dict, stage: str | None) -> Reply:
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
            if out is not None:
                return out if isinstance(out, Reply) else Reply(out)
        return stage_reply(body, stage)

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
            refused = self.profile.refusal(request["body"]) if self.profile is not None else None
            if not self.serves(request["body"].get("model")):
                refused = 404, model_not_found(request["body"].get("model"))
            if refused is not None:
                errors.append({"id": f"batch_req_{i}", "custom_id": request["custom_id"], "error": None,
                               "response": {"status_code": refused[0], "request_id": f"req_{i}", "body": refused[1]}})
                continue
            if status:
                errors.append({"id": f"batch_req_{i}", "custom_id": request["custom_id"], "error": None,
                               "response": {"status_code": status, "request_id": f"req_{i}", "body": {
                                   "error": {"message": f"test endpoint batch error {status}", "type": "server_error"}}}})
                continue
            stage = request["custom_id"].rpartition(":")[0] or None
            reply = self._answer(request["body"], stage)
            output.append({"id": f"batch_req_{i}", "custom_id": request["custom_id"], "error": None,
                           "response": {"status_code": 200, "request_id": f"req_{i}",
                                        "body": self._completion(reply.content or "", request["body"])}})
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

    def wait_for(self, condition: Callable[[dict], bool], timeout: float = 60.0) -> bool:
        """Wait until ``condition(stats)`` holds (looked at whenever a chat request arrives or ends): a barrier for a
        responder, e.g. replies held until the endpoint has rejected a request (``lambda s: s["rejected"] > 0``).
        False when ``timeout`` seconds pass without it (a bound on a failing test, not a measurement).

        :param condition: a function of :attr:`stats` (called with the endpoint's lock held: it must take no lock).
        :param timeout: the longest wait, in seconds.
        """
        with self._changed:
            return self._changed.wait_for(lambda: condition(self.stats), timeout)

    @property
    def count(self) -> int:
        """Chat requests received (rejected ones included)."""
        with self._lock:
            return len(self.requests)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> TestEndpoint:
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

    def __enter__(self) -> TestEndpoint:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
