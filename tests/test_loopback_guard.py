"""The suite refuses any connection that does not stay on this machine (pytest-socket)."""

from __future__ import annotations

import socket

import pytest
from pytest_socket import SocketConnectBlockedError


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_a_connection_to_a_public_address_is_refused_before_it_leaves():
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): the guard refuses it before any packet is sent.
    with pytest.raises(SocketConnectBlockedError), socket.create_connection(("192.0.2.1", 443)):
        pass


def test_a_connection_to_loopback_is_allowed():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
