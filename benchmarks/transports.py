"""The HTTP transports a benchmark can run the LLM client on, side by side in one run (``bench_track.py
--transports``), without an option of the package for it: a command run as ``python benchmarks/transports.py NAME
pyterrier-nuggets-arguments ...`` is the package's command line with its endpoints' transport replaced by ``NAME``:

- ``package``: the package's own, as it is (``llm/transport.py``);
- ``hand-written``: one keep-alive socket per worker thread, each request written in one piece, the reply read by a
  buffered reader per connection, parsed by hand (the package's transport until the A/B of docs/benchmarks.md, "Which
  HTTP client under the LLM client");
- ``http.client``: one keep-alive ``http.client`` connection per worker thread (the package's transport after it);
- ``sdk``: no transport of the package: the openai SDK's own request path (httpx's connection pool, as
  ``openai.OpenAI(http_client=...)`` plugs it).

Each replacement keeps what the client relies on (the SDK's error class of each status, the stage header, the
timeout, keep-alive): the package's tests of the transport pass against ``hand-written`` and ``http.client``.
"""
from __future__ import annotations

import json
import os
import re
import socket
import ssl
import sys
import threading
from typing import BinaryIO
from urllib.parse import urlsplit

import openai

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from pyterrier_nuggets.llm.retry import status_error  # noqa: E402

try:  # the HTTP library of the openai SDK: httpx2 from openai 3, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _http

MAX_LINE = 65536  # bytes of a status or header line (http.client's limit)
MAX_HEADERS = 100  # headers of a reply (http.client's limit)


class ReplyError(Exception):
    """A reply that is not HTTP/1.x as this transport reads it (a status line, headers, a body)."""


class HandWrittenTransport:
    """POST JSON to ``{base_url}{path}`` on a keep-alive socket per thread, the HTTP/1.1 reply read by hand."""

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
        more = _header_lines(headers) if headers else ""
        return (f"POST {self.prefix}{path} HTTP/1.1\r\n{self._fixed}{more}Content-Length: {length}\r\n\r\n"
                .encode("latin-1"))

    def _connection(self) -> tuple[socket.socket, BinaryIO]:
        con = getattr(self._local, "con", None)
        if con is None:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
            except (ConnectionError, EOFError) as exc:
                self._drop()
                if attempt or fresh:
                    raise openai.APIConnectionError(message=f"Connection error ({exc or type(exc).__name__}).",
                                                    request=self._request) from exc
            except (OSError, ReplyError) as exc:
                self._drop()
                raise openai.APIConnectionError(message=f"Connection error ({exc}).", request=self._request) from exc
        if close:
            self._drop()
        if status >= 300:
            try:
                error_body = json.loads(raw)
            except ValueError:
                error_body = None
            error = error_body.get("error") if isinstance(error_body, dict) else None
            message = (error.get("message") if isinstance(error, dict) else None) or raw[:200].decode("utf-8",
                                                                                                      "replace")
            response = _http.Response(status, headers=headers, content=raw, request=self._request)
            raise status_error(status, f"Error code: {status} - {message}", response,
                               error if error is not None else error_body)
        return json.loads(raw), status, headers

    def close(self) -> None:
        self._drop()


_INVALID_HEADER = re.compile(r"[^!#$%&'*+\-.^_`|~0-9A-Za-z]")
_INVALID_VALUE = re.compile(r"\n(?![ \t])|\r(?![ \t\n])")


def _header_lines(headers: dict[str, str]) -> str:
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
            break
    connection = headers.get("connection", "").lower()
    close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
    if status in (204, 304):
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
    else:
        body, close = reader.read(), True
    return status, headers, body, close


def _read_chunks(reader: BinaryIO) -> bytes:
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
    while _line(reader) not in (b"\r\n", b"\n", b""):
        pass
    return b"".join(parts)


def http_client_transport():
    """The package's ``http.client`` transport, where it has one (after the A/B); else None."""
    from pyterrier_nuggets.llm import transport
    return getattr(transport, "HttpClientTransport", None)


TRANSPORTS = ("package", "hand-written", "http.client", "sdk")


def install(name: str) -> None:
    """Replace the transport of every endpoint the client makes from now on by ``name`` (one of :data:`TRANSPORTS`)."""
    from pyterrier_nuggets.llm import endpoint
    if name == "package":
        return
    if name == "sdk":
        endpoint.keep_alive_possible = lambda base_url: False
    elif name == "hand-written":
        endpoint.KeepAliveTransport = HandWrittenTransport
    elif name == "http.client":
        replacement = http_client_transport()
        if replacement is None:
            raise SystemExit("the package has no http.client transport here: run the A/B on the code after it")
        endpoint.KeepAliveTransport = replacement
    else:
        raise SystemExit(f"no transport {name!r}: one of {', '.join(TRANSPORTS)}")


if __name__ == "__main__":
    install(sys.argv[1])
    from pyterrier_nuggets.cli import main
    sys.exit(main(sys.argv[2:]))
