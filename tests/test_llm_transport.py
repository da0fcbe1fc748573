"""The keep-alive transport (llm/transport.py) reads the replies HTTP/1.1 allows: a body of Content-Length bytes, of
chunks or up to the end of the connection, 1xx replies before the real one, a connection the server closes while idle
or after a reply; it keeps http.client's limits and raises the SDK's error classes (a status, no HTTP, a timeout, a
new connection failing); and it sends each request in one piece, with its headers. Against a server on 127.0.0.1 (a
free port) that sends scripted bytes, one scripted reply per request it reads. The same tests pass against the
http.client transport of benchmarks/transports.py (the A/B of docs/benchmarks.md), but the 103 Early Hints."""
from __future__ import annotations

import json
import socket
import threading

import openai
import pytest

from pyterrier_nuggets.llm.transport import KeepAliveTransport

COMPLETION = {"choices": [{"message": {"content": "OK"}}]}
BODY = json.dumps(COMPLETION).encode()


class ScriptedServer:
    """Accepts connections and answers each request read with the next scripted reply (bytes), then closes the
    connection where a reply is followed by ``CLOSE``. Keeps the requests it read (head and body)."""

    CLOSE = object()

    def __init__(self, replies: list):
        self.replies = list(replies)
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sock.close()
        self._thread.join(timeout=10)

    def _serve(self) -> None:
        while self.replies:
            try:
                con, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            with con, con.makefile("rb") as reader:
                while self.replies:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = reader.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n")
                                  if h.lower().startswith(b"content-length:"))
                    self.requests.append((head, reader.read(length)))
                    con.sendall(self.replies.pop(0))
                    if self.replies and self.replies[0] is self.CLOSE:
                        self.replies.pop(0)
                        break


def reply(status: str = "200 OK", headers: str = "", body: bytes = BODY, length: bool = True) -> bytes:
    size = f"Content-Length: {len(body)}\r\n" if length else ""
    return f"HTTP/1.1 {status}\r\n{size}{headers}\r\n".encode() + body


def chunked(body: bytes) -> bytes:
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nX-Trailer: t\r\n\r\n"


def post(transport: KeepAliveTransport, stage: str = "assign") -> tuple[dict, int, dict]:
    return transport.post("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "é"}]},
                          {"X-Stage": stage})


def test_each_form_of_body_on_one_connection():
    """Content-Length, chunked (with a trailer) and a 100 Continue before a reply: read on one keep-alive connection;
    every request is sent whole, with the client's headers and the stage's."""
    script = [reply(), chunked(BODY), b"HTTP/1.1 100 Continue\r\n\r\n" + reply(headers="X-Seen: yes\r\n")]
    with ScriptedServer(script) as server:
        transport = KeepAliveTransport(server.base_url, "key", timeout=10)
        first, second, third = post(transport), post(transport), post(transport, "support")
        assert first == (COMPLETION, 200, {"content-length": str(len(BODY))})
        assert [r[0] for r in (first, second, third)] == [COMPLETION] * 3
        assert third[2]["x-seen"] == "yes" and second[2] == {"transfer-encoding": "chunked"}
        assert server.connections == 1
        head, body = server.requests[2]
        assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
        for line in (b"Authorization: Bearer key", b"Content-Type: application/json", b"X-Stage: support",
                     f"Host: 127.0.0.1:{server.base_url.split(':')[2].split('/')[0]}".encode()):
            assert line in head.split(b"\r\n")
        assert json.loads(body) == {"model": "m", "messages": [{"role": "user", "content": "é"}]}


def test_an_early_hints_reply_before_the_reply_is_skipped():
    """A 103 Early Hints (a proxy's, with its Link header) before the reply is skipped like 100 Continue: the reply read
    is the request's own, and the next request's reply is its own too (nothing left unread on the connection)."""
    early = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
    second = json.dumps({"choices": [{"message": {"content": "second"}}]}).encode()
    with ScriptedServer([early + reply(headers="X-Seen: first\r\n"), reply(body=second)]) as server:
        transport = KeepAliveTransport(server.base_url, "key", timeout=10)
        completion, status, headers = post(transport)
        assert (completion, status, headers["x-seen"], "link" in headers) == (COMPLETION, 200, "first", False)
        assert post(transport)[0]["choices"][0]["message"]["content"] == "second"
        assert server.connections == 1


def test_a_body_to_the_end_of_the_connection_and_connection_close():
    """A reply without length is read to the end of the connection, a ``Connection: close`` reply closes it, and the
    next request opens a new one."""
    script = [reply(length=False), ScriptedServer.CLOSE, reply(headers="Connection: close\r\n"), ScriptedServer.CLOSE,
              reply()]
    with ScriptedServer(script) as server:
        transport = KeepAliveTransport(server.base_url, "key", timeout=10)
        assert [post(transport)[0] for _ in range(3)] == [COMPLETION] * 3
        assert server.connections == 3


def test_an_idle_close_is_opened_again_once_and_a_status_is_the_sdks_error():
    """The server closes a kept connection without a reply: the request goes again on a new connection, once. A 429
    is the SDK's RateLimitError with its Retry-After; a reply that is not HTTP is a connection error."""
    script = [reply(), ScriptedServer.CLOSE, reply(status="429 Too Many Requests", headers="Retry-After: 2\r\n",
                                                   body=b'{"error": {"message": "slow down"}}'),
              b"SSH-2.0-OpenSSH\r\n\r\n"]
    with ScriptedServer(script) as server:
        transport = KeepAliveTransport(server.base_url, "key", timeout=10)
        assert post(transport)[0] == COMPLETION
        with pytest.raises(openai.RateLimitError) as error:
            post(transport)
        assert error.value.response.headers["retry-after"] == "2" and "slow down" in str(error.value)
        with pytest.raises(openai.APIConnectionError, match="not an HTTP/1.x reply"):
            post(transport)
        assert server.connections == 2


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent():
    """A header value with a line break (a header injected) is refused before anything is sent, and the transport
    sends the next request as if nothing happened."""
    with ScriptedServer([reply()]) as server:
        transport = KeepAliveTransport(server.base_url, "key", timeout=10)
        with pytest.raises(ValueError, match="invalid HTTP header"):
            transport.post("/chat/completions", {}, {"X-Stage": "a\r\nInjected: yes"})
        assert post(transport)[0] == COMPLETION
        assert len(server.requests) == 1 and b"Injected" not in server.requests[0][0]


def test_a_new_connection_that_fails_is_the_servers_failure_not_an_idle_close():
    """A connection just opened that the server closes without a reply is a connection error at once (not asked again
    on another connection, as a kept connection closed while idle is)."""
    with ScriptedServer([b"", ScriptedServer.CLOSE, reply()]) as server:
        transport = KeepAliveTransport(server.base_url, "key", timeout=10)
        with pytest.raises(openai.APIConnectionError):
            post(transport)
        assert post(transport)[0] == COMPLETION
        assert server.connections == 2 and len(server.requests) == 2


def test_a_reply_past_the_limits_is_a_connection_error_and_the_next_request_goes_on_a_new_connection():
    """A line of more than 64 KiB and more than 100 headers (http.client's limits) are connection errors; the
    connection is dropped and the next request opens a new one."""
    long_line = reply(headers="X-Long: " + "a" * 65536 + "\r\n")
    many = reply(headers="".join(f"X-H{i}: {i}\r\n" for i in range(101)))
    with ScriptedServer([long_line, many, reply(headers="".join(f"X-H{i}: {i}\r\n" for i in range(90)))]) as server:
        transport = KeepAliveTransport(server.base_url, "key", timeout=10)
        for _ in range(2):
            with pytest.raises(openai.APIConnectionError):
                post(transport)
        completion, status, headers = post(transport)
        assert (completion, status, len(headers)) == (COMPLETION, 200, 91)
        assert server.connections == 3


def test_a_server_that_never_replies_is_the_sdks_timeout():
    """A request sent to a server that takes it and never answers ends, after the client's timeout, in the SDK's
    APITimeoutError (the table retries it), not a hang."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens (the connection is made) and never reads
        transport = KeepAliveTransport(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", "key", timeout=0.2)
        with pytest.raises(openai.APITimeoutError):
            post(transport)
