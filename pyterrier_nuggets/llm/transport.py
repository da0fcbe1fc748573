"""The HTTP transport of the LLM client at TREC scale: one keep-alive connection per worker thread.

The openai SDK spends about half a millisecond of CPU per request on building it (options, headers, URL
parsing) and its connection pool scans every connection per request; at 64 or 256 requests in flight that, not
the endpoint, sets the pace (docs/benchmarks.md, "The LLM client at TREC scale"). A chat completion request needs none of
it: a POST of a JSON body with a few headers. :class:`KeepAliveTransport` sends it on a socket of its own per thread
(no shared pool, no lock), reused across requests, and reads the reply as JSON. It serves plain ``http://`` and
``https://`` endpoints; the embedded model (an HTTP transport of the SDK) and endpoints reached through a proxy
(``HTTPS_PROXY`` ...) keep the SDK's path.

The request goes out in one write: the head, made once per client, and the body. The reply is read from a buffered
reader made once per connection: the status line, the headers and a body of ``Content-Length`` bytes, of chunks
(``Transfer-Encoding: chunked``) or up to the end of the connection; 1xx replies are skipped. That is what the
standard library's ``http.client`` does for such a request, at 0.07 instead of 0.15 ms of CPU per request (it
parses each reply's headers with the ``email`` package, makes a reader per reply and writes the head and the body
separately); its limits are kept (a line of at most 64 KiB, at most 100 headers). It is written here because no
maintained library does this job at that cost, and because the cost shows at track level: in an A/B of whole
``trec-rag`` commands taking turns (docs/benchmarks.md, "Which HTTP client under the LLM client"), the same job on
``http.client`` took 0.11 ms more CPU per call at 256 in flight and 0.19 ms more at 64, in every turn, for the same
wall time; ``h11``, the sans-I/O HTTP/1.1 library under httpx, takes as much CPU per request as ``http.client``, and
the SDK's own path (httpx's pool) 2.5-2.9 ms per call (``benchmarks/bench_transport.py``, ``bench_track.py
--transports``).

Its errors are the SDK's classes, so that the classification table (:mod:`.retry`) reads them as it reads the
SDK's: ``openai.APIConnectionError`` (no connection, or a reply that is not HTTP), ``openai.APITimeoutError``, and
the ``APIStatusError`` subclass of each status (:func:`~.retry.status_error`: ``RateLimitError`` 429,
``InternalServerError`` 5xx, ...).
"""
from __future__ import annotations

import json
import re
import socket
import ssl
import threading
import urllib.request
from typing import BinaryIO
from urllib.parse import urlsplit

import openai

from pyterrier_nuggets.llm.retry import status_error

try:  # the HTTP library of the openai SDK: httpx2 from openai 3, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _http


def keep_alive_possible(base_url: str | None) -> bool:
    """Whether :class:`KeepAliveTransport` can serve this endpoint: http(s), and no proxy configured for it."""
    if not base_url:
        return False
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    if proxies.get(parts.scheme) and not urllib.request.proxy_bypass(parts.hostname):
        return False
    return True


MAX_LINE = 65536  # bytes of a status or header line (http.client's limit)
MAX_HEADERS = 100  # headers of a reply (http.client's limit)


class ReplyError(Exception):
    """A reply that is not HTTP/1.x as this transport reads it (a status line, headers, a body)."""


class KeepAliveTransport:
    """POST JSON to ``{base_url}{path}`` on a keep-alive connection per thread (see the module docstring)."""

    def __init__(self, base_url: str, api_key: str, timeout: float, headers: dict[str, str] | None = None):
        parts = urlsplit(base_url)
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname, parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json",
                        "Authorization": f"Bearer {api_key}", "User-Agent": "pyterrier-nuggets", **(headers or {})}
        host = self.host if ":" not in self.host else f"[{self.host}]"  # an IPv6 address is bracketed
        default_port = self.port == (443 if self.https else 80)
        self._fixed = _header_lines({"Host": host if default_port else f"{host}:{self.port}", **self.headers})
        self._ssl = ssl.create_default_context() if self.https else None
        self._local = threading.local()
        self._request = _http.Request("POST", base_url)  # what the SDK's error classes carry

    def _head(self, path: str, length: int, headers: dict[str, str] | None) -> bytes:
        """The request line and headers of a POST of ``length`` bytes (``headers``: more than the client's own)."""
        more = _header_lines(headers) if headers else ""
        return f"POST {self.prefix}{path} HTTP/1.1\r\n{self._fixed}{more}Content-Length: {length}\r\n\r\n".encode("latin-1")

    def _connection(self) -> tuple[socket.socket, BinaryIO]:
        """This thread's connection and its reader, opened when there is none."""
        con = getattr(self._local, "con", None)
        if con is None:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # the request is one write: send it now
                if self._ssl is not None:
                    sock = self._ssl.wrap_socket(sock, server_hostname=self.host)
            except BaseException:
                sock.close()
                raise
            con = self._local.con = (sock, sock.makefile("rb"))
        return con

    def _drop(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            sock, reader = con
            reader.close()
            sock.close()
            self._local.con = None

    def post(self, path: str, body: dict, headers: dict[str, str] | None = None) -> tuple[dict, int, dict[str, str]]:
        """``(the reply's JSON, status, headers)`` of a 2xx reply; an error of the SDK's classes otherwise. A
        connection the server closed while idle is opened again once, transparently. ``headers``: more request
        headers (the stage, :data:`~.config.STAGE_HEADER`)."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        request = self._head(path, len(data), headers) + data
        for attempt in (0, 1):
            fresh = getattr(self._local, "con", None) is None
            try:
                sock, reader = self._connection()
                sock.sendall(request)
                status, headers, raw, close = _read_reply(reader)
                break
            except TimeoutError as exc:
                self._drop()
                raise openai.APITimeoutError(request=self._request) from exc
            except (ConnectionError, EOFError) as exc:  # reset, broken pipe, or closed before the status line
                self._drop()
                if attempt or fresh:  # a new connection that fails is the server's, not an idle close
                    raise openai.APIConnectionError(message=f"Connection error ({exc or type(exc).__name__}).",
                                                    request=self._request) from exc
            except (OSError, ReplyError) as exc:
                self._drop()
                raise openai.APIConnectionError(message=f"Connection error ({exc}).", request=self._request) from exc
        if close:
            self._drop()
        if status >= 300:
            raise self._status_error(status, headers, raw)
        return json.loads(raw), status, headers

    def _status_error(self, status: int, headers: dict[str, str], raw: bytes) -> openai.APIStatusError:
        """The SDK's error of this status, carrying the reply's headers (``Retry-After``) and its ``error`` body."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        message = (error.get("message") if isinstance(error, dict) else None) or raw[:200].decode("utf-8", "replace")
        response = _http.Response(status, headers=headers, content=raw, request=self._request)
        return status_error(status, f"Error code: {status} - {message}", response,
                            error if error is not None else body)

    def close(self) -> None:
        self._drop()



_INVALID_HEADER = re.compile(r"[^!#$%&'*+\-.^_`|~0-9A-Za-z]")  # a header name is a token (RFC 9110)
_INVALID_VALUE = re.compile(r"\n(?![ \t])|\r(?![ \t\n])")  # no line break in a value (as http.client)


def _header_lines(headers: dict[str, str]) -> str:
    """``Name: value`` lines, each ended by CRLF; a name that is no token or a value holding a line break is refused
    (as http.client does)."""
    for name, value in headers.items():
        if _INVALID_HEADER.search(name) or _INVALID_VALUE.search(value):
            raise ValueError(f"invalid HTTP header {name!r} (a line break in its value, or a name that is no token)")
    return "".join(f"{name}: {value}\r\n" for name, value in headers.items())


def _line(reader: BinaryIO) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise ReplyError("a line of the reply is longer than 64 KiB")
    return line


def _read_reply(reader: BinaryIO) -> tuple[int, dict[str, str], bytes, bool]:
    """One reply: ``(status, headers with lower-case names, body, whether the connection closes after it)``. An
    ``EOFError`` when the connection was closed before its status line (an idle connection the server closed)."""
    while True:
        line = _line(reader)
        if not line:
            raise EOFError("the server closed the connection")
        version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise ReplyError(f"not an HTTP/1.x reply: {line[:60]!r}")
        headers: dict[str, str] = {}
        while True:
            line = _line(reader)
            if line in (b"\r\n", b"\n", b""):
                break
            if len(headers) >= MAX_HEADERS:
                raise ReplyError(f"more than {MAX_HEADERS} headers in the reply")
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon:
                raise ReplyError(f"a header line without a colon: {line[:60]!r}")
            headers[name.strip().lower()] = value.strip()
        status = int(code)
        if status >= 200:
            break  # 1xx (100 Continue, 103 Early Hints): a reply to come
    connection = headers.get("connection", "").lower()
    close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
    if status in (204, 304):  # no body, whatever the headers say
        body = b""
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        body = _read_chunks(reader)
    elif "content-length" in headers:
        length = headers["content-length"]
        if not length.isdigit():
            raise ReplyError(f"Content-Length {length!r} is not a number")
        body = reader.read(int(length))
        if len(body) < int(length):
            raise ReplyError(f"the reply ended after {len(body)} of its {length} bytes")
    else:  # a body up to the end of the connection
        body, close = reader.read(), True
    return status, headers, body, close


def _read_chunks(reader: BinaryIO) -> bytes:
    """A body of ``Transfer-Encoding: chunked`` (its trailer headers read and left)."""
    parts = []
    while True:
        size = _line(reader).split(b";", 1)[0].strip()
        try:
            n = int(size, 16)
        except ValueError:
            raise ReplyError(f"a chunk size that is not hexadecimal: {size[:20]!r}") from None
        if n == 0:
            break
        chunk = reader.read(n)
        if len(chunk) < n or _line(reader) not in (b"\r\n", b"\n"):
            raise ReplyError("the reply ended inside a chunk")
        parts.append(chunk)
    while _line(reader) not in (b"\r\n", b"\n", b""):  # trailers
        pass
    return b"".join(parts)
