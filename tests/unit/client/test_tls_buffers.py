"""TLS connections opened after `limit_read_buffers` read into the smaller buffer and
still carry messages many times its size, both ways."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from asyncio import sslproto
from collections.abc import Iterator
from pathlib import Path

import pytest

from muster.client.tls_buffers import READ_BUFFER_BYTES, limit_read_buffers
from muster.webhooks.certificates import issue

MESSAGE = bytes(range(256)) * 1024  # 256 KiB: eight buffers' worth


@pytest.fixture
def restored_buffer_size() -> Iterator[None]:
    default = sslproto.SSLProtocol.max_size
    yield
    sslproto.SSLProtocol.max_size = default


async def test_a_connection_reads_into_the_smaller_buffer(
    tmp_path: Path, restored_buffer_size: None
) -> None:
    limit_read_buffers()
    served = issue(["localhost"], now=datetime.datetime.now(datetime.UTC))
    (tmp_path / "chain.pem").write_bytes(served.chain)
    (tmp_path / "key.pem").write_bytes(served.key)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(tmp_path / "chain.pem", tmp_path / "key.pem")
    client_side = ssl.create_default_context(cadata=served.ca_bundle.decode())
    buffers: list[int] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        buffers.append(len(writer.transport._ssl_protocol._ssl_buffer))  # type: ignore[attr-defined]
        writer.write(await reader.readexactly(len(MESSAGE)))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_side)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_side, server_hostname="localhost"
        )
        writer.write(MESSAGE)
        await writer.drain()
        assert await reader.readexactly(len(MESSAGE)) == MESSAGE
        writer.close()
        await writer.wait_closed()
    assert buffers == [READ_BUFFER_BYTES]
