"""The HTTP transports a benchmark can run the LLM client on, side by side in one run (``bench_track.py
--transports``), without an option of the package for it: a command run as ``python benchmarks/transports.py NAME
pyterrier-nuggets-arguments ...`` is the package's command line with its endpoints' transport replaced by ``NAME``:

- ``package``: the package's own, as it is (``llm/transport.py``: one keep-alive socket per worker thread, each
  request written in one piece, the reply read by one buffered reader per connection, parsed by hand);
- ``http.client``: one keep-alive connection of the standard library's ``http.client`` per worker thread
  (:class:`HttpClientTransport` below: the candidate of the A/B in docs/benchmarks.md, "Which HTTP client under the
  LLM client", kept here, outside the package, only so that the A/B can be run again);
- ``sdk``: no transport of the package: the openai SDK's own request path (httpx's connection pool, as
  ``openai.OpenAI(http_client=...)`` plugs it).

Each keeps what the client relies on (the SDK's error class of each status, the stage header, the timeout,
keep-alive, a kept connection closed while idle opened again once): the package's tests of the transport
(tests/test_llm_transport.py) pass against ``http.client`` too (checked on the day of the A/B), but for a 103 Early
Hints before the reply, a connection error there (``http.client`` skips only 100 Continue).
"""
from __future__ import annotations

import http.client
import json
import os
import sys

import openai

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from pyterrier_nuggets.llm.transport import KeepAliveTransport  # noqa: E402


class HttpClientTransport(KeepAliveTransport):
    """The job of the package's ``KeepAliveTransport`` done by the standard library's ``http.client``: one keep-alive
    connection per thread (its address, headers, timeout and the SDK's error of each status are the package's). A 1xx reply other than 100 Continue (which ``http.client`` does not skip) is a connection
    error, the connection dropped, so that no reply is ever read as another request's."""

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
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        sent = {**self.headers, **headers} if headers else self.headers
        for attempt in (0, 1):
            fresh = getattr(self._local, "con", None) is None
            try:
                con = self._connection()
                try:
                    con.request("POST", self.prefix + path, body=data, headers=sent)
                except ValueError as exc:  # http.client refuses a header before it sends anything
                    self._drop()  # the connection object is half-way through a request: not reusable
                    raise ValueError(f"invalid HTTP header ({exc}: a line break in its value, or a name that is "
                                     "no token)") from None
                reply = con.getresponse()
                raw = reply.read()
                break
            except TimeoutError as exc:
                self._drop()
                raise openai.APITimeoutError(request=self._request) from exc
            except (http.client.RemoteDisconnected, ConnectionError) as exc:
                self._drop()
                if attempt or fresh:  # a new connection that fails is the server's, not an idle close
                    raise openai.APIConnectionError(message=f"Connection error ({exc}).", request=self._request) \
                        from exc
            except http.client.BadStatusLine as exc:
                self._drop()
                raise openai.APIConnectionError(message=f"Connection error (not an HTTP/1.x reply: {exc}).",
                                                request=self._request) from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise openai.APIConnectionError(message=f"Connection error ({exc}).", request=self._request) from exc
        headers = {k.lower(): v for k, v in reply.getheaders()}
        if reply.will_close or reply.status < 200:  # after a 1xx (103 Early Hints) the reply is still to come
            self._drop()
        if reply.status < 200:
            raise openai.APIConnectionError(message=f"Connection error (an informational reply {reply.status} "
                                            "before the reply, which http.client does not read).",
                                            request=self._request)
        if reply.status >= 300:
            raise self._status_error(reply.status, headers, raw)
        return json.loads(raw), reply.status, headers

    def close(self) -> None:
        self._drop()


TRANSPORTS = ("package", "http.client", "sdk")


def install(name: str) -> None:
    """Replace the transport of every endpoint the client makes from now on by ``name`` (one of :data:`TRANSPORTS`)."""
    from pyterrier_nuggets.llm import endpoint
    if name == "package":
        return
    if name == "sdk":
        endpoint.keep_alive_possible = lambda base_url: False
    elif name == "http.client":
        endpoint.KeepAliveTransport = HttpClientTransport
    else:
        raise SystemExit(f"no transport {name!r}: one of {', '.join(TRANSPORTS)}")


if __name__ == "__main__":
    install(sys.argv[1])
    from pyterrier_nuggets.cli import main
    sys.exit(main(sys.argv[2:]))
