"""Loaded first by the python that runs a docs script (PYTHONPATH): no host but loopback.

tests/plugin/test_docs_examples.py runs each script block of the docs in a fresh python
with this directory on PYTHONPATH. A name lookup or a connection to any other host is
refused, and written to the file ``AGENTFAULTS_DOCS_REACHED`` names, so a script that
swallows the error still fails its test.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Any

_LOOPBACK_NAMES = {"localhost", "", None}


def _loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(what: str) -> None:
    with Path(os.environ["AGENTFAULTS_DOCS_REACHED"]).open("a", encoding="utf-8") as log:
        log.write(what + "\n")
    raise OSError(f"a docs example reached for the network: {what}")


_getaddrinfo = socket.getaddrinfo
_connect = socket.socket.connect


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _loopback(host):
        _refuse(f"name lookup of {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


def _guarded_connect(sock: socket.socket, address: Any) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        _refuse(f"connection to {address!r}")
    _connect(sock, address)


if os.environ.get("AGENTFAULTS_DOCS_REACHED"):
    socket.getaddrinfo = _guarded_getaddrinfo
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
