"""The one rule for the package's servers (the test endpoint, the annotation tool): a port that another program
holds is refused in one line naming the port and the option that chooses another (instead of ``[Errno 98] Address
already in use`` or uvicorn's log and exit code)."""
from __future__ import annotations

import errno
import socket

from ir_measures_ext.errors import InvalidInput


class PortInUse(InvalidInput):
    """The port a server was asked to listen on is taken (an ``InvalidInput``: the command line prints it in one
    line, exit code 2).

    :param host: the address it was to listen on.
    :param port: the port.
    :param what: the server, e.g. ``"the test endpoint"``.
    """

    def __init__(self, host: str, port: int, what: str):
        self.host, self.port = host, port
        super().__init__(f"{what}: port {port} on {host} is in use (another server, or one started earlier): give "
                         f"another port, or port=0 for any free one",
                         cli=f"{what}: port {port} on {host} is in use (another server, or one started earlier): "
                             "give another --port, or --port 0 for any free one")


def in_use(error: OSError) -> bool:
    """Whether ``error`` (of a ``bind``) says the address is taken."""
    return error.errno == errno.EADDRINUSE


def listening_socket(host: str, port: int, what: str) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: any free one) and listening, as uvicorn binds its own
    (``SO_REUSEADDR``); :class:`PortInUse` when the port is taken.

    :param host: the address (``127.0.0.1``: this machine only; ``::1`` and other IPv6 addresses too).
    :param port: the port.
    :param what: the server, for the error.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if in_use(e):
            raise PortInUse(host, port, what) from None
        raise
    sock.listen(2048)
    return sock
