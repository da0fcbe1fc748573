"""The HTTP transport of the LLM client at TREC scale: one keep-alive connection per worker thread.

The openai SDK spends about half a millisecond of CPU per request on building it (options, headers, URL
parsing) and its connection pool scans every connection per request; at 64 or 256 requests in flight that, not
the endpoint, sets the pace (docs/benchmarks.md, "The LLM client's CPU"). A chat completion request needs none of
it: a POST of a JSON body with two headers. :class:`KeepAliveTransport` sends it with the standard library's
``http.client`` on a connection of its own per thread (no shared pool, no lock), reused across requests, and
reads the reply as JSON. It serves plain ``http://`` and ``https://`` endpoints; the embedded model (an HTTP
transport of the SDK) and endpoints reached through a proxy (``HTTPS_PROXY`` ...) keep the SDK's path.

Its errors are the SDK's classes, so that the classification table (:mod:`.retry`) reads them as it reads the
SDK's: ``openai.APIConnectionError`` (no connection), ``openai.APITimeoutError``, and the ``APIStatusError``
subclass of each status (:func:`~.retry.status_error`: ``RateLimitError`` 429, ``InternalServerError`` 5xx, ...).
"""
from __future__ import annotations

import http.client
import json
import ssl
import threading
import urllib.request
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
        self._ssl = ssl.create_default_context() if self.https else None
        self._local = threading.local()
        self._request = _http.Request("POST", base_url)  # what the SDK's error classes carry

    def _connection(self) -> http.client.HTTPConnection:
        con = getattr(self._local, "con", None)
        if con is None:
            if self.https:
                con = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self._ssl)
            else:
                con = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._local.con = con
        return con

    def _drop(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    def post(self, path: str, body: dict, headers: dict[str, str] | None = None) -> tuple[dict, int, dict[str, str]]:
        """``(the reply's JSON, status, headers)`` of a 2xx reply; an error of the SDK's classes otherwise. A
        connection the server closed while idle is opened again once, transparently. ``headers``: more request
        headers (the stage, :data:`~.config.STAGE_HEADER`)."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        sent = {**self.headers, **headers} if headers else self.headers
        for attempt in (0, 1):
            fresh = getattr(self._local, "con", None) is None
            try:
                con = self._connection()
                con.request("POST", self.prefix + path, body=data, headers=sent)
                reply = con.getresponse()
                raw = reply.read()
                break
            except TimeoutError as exc:
                self._drop()
                raise openai.APITimeoutError(request=self._request) from exc
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                self._drop()
                if attempt or fresh:  # a new connection that fails is the server's, not an idle close
                    raise openai.APIConnectionError(message=f"Connection error ({exc}).", request=self._request) \
                        from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise openai.APIConnectionError(message=f"Connection error ({exc}).", request=self._request) from exc
        headers = {k.lower(): v for k, v in reply.getheaders()}
        if reply.will_close:
            self._drop()
        if reply.status >= 300:
            raise self._status_error(reply.status, headers, raw)
        return json.loads(raw), reply.status, headers

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

