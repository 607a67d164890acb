"""Shared by the MCP tests: an ``agentworld_envs.serving.mcp_server`` over HTTP on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager

import anyio
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def http_server(*args: str):
    """Start the server with ``args`` (env id and options) over HTTP; yields its MCP URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "agentworld_envs.serving.mcp_server", *args, "--transport", "http",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("HTTP server did not start listening within 60 s")
                await anyio.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        proc.stderr.close()
