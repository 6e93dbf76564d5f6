"""The clarification channel of ``sgfs eval --ambiguous`` (docs/eval.md, "Ambiguity and clarification").

In the conditions with a channel the agent's ``$SGFS_ASK`` names an executable in its private scratch directory:
``"$SGFS_ASK" "your question"`` prints the oracle's reply. The harness serves the item's one
:class:`qa.clarify.Oracle` on a Unix socket beside it, from a thread, for as long as the item runs. A socket
rather than a file exchange because it crosses the sandbox as the scratch directory does (bound read-write at
the same path) and needs no polling; the client is a few lines of Python run by the harness's own interpreter in
isolated mode (``-I``), which the sandbox shows read-only, so it works in any sandbox and outside one.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

from qa.clarify import MAX_QUESTION_CHARS, Oracle

ASK_VARIABLE = "SGFS_ASK"
SOCKET_NAME = "ask.sock"
CLIENT_NAME = "ask"
# sockaddr_un holds 108 bytes, the final NUL included.
MAX_SOCKET_PATH = 107
# Bytes read of one question: the oracle reads MAX_QUESTION_CHARS characters, each at most 4 bytes in UTF-8.
MAX_QUESTION_BYTES = 4 * MAX_QUESTION_CHARS
MAX_REPLY_BYTES = 1 << 16
ACCEPT_POLL_S = 0.1  # how often the server looks whether the item ended
CONNECTION_TIMEOUT_S = 5.0  # a client that sends nothing holds the server no longer than this
CLIENT_TIMEOUT_S = 30.0  # the client gives up on a harness that does not answer (it always should, at once)
JOIN_TIMEOUT_S = 5.0

# The client: the question is its arguments joined by spaces. Exit 0 with the reply on stdout; 2 without a
# question; 1 when the channel cannot be reached.
CLIENT = r"""
import os, socket, sys
if len(sys.argv) < 2 or not " ".join(sys.argv[1:]).strip():
    sys.stderr.write('usage: "$SGFS_ASK" "your clarifying question"\n')
    sys.exit(2)
try:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(TIMEOUT)
        os.chdir(DIRECTORY)  # a relative address: a Unix socket's path may hold only 107 bytes
        s.connect(NAME)
        s.sendall(" ".join(sys.argv[1:]).encode("utf-8", "replace")[:LIMIT])
        s.shutdown(socket.SHUT_WR)
        chunks, size = [], 0
        while size < REPLY:
            chunk = s.recv(REPLY - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
except OSError as exc:
    sys.stderr.write(f"SGFS_ASK: the clarification channel cannot be reached: {exc}\n")
    sys.exit(1)
print(b"".join(chunks).decode("utf-8", "replace"))
"""


class ChannelError(Exception):
    """The channel cannot be set up for an item (its socket path is too long, the socket cannot be made)."""


def client_script(socket_path: str) -> str:
    """The shell script ``$SGFS_ASK`` names: runs :data:`CLIENT` with this interpreter, isolated."""
    settings = (CLIENT_TIMEOUT_S, os.path.dirname(socket_path), SOCKET_NAME, MAX_QUESTION_BYTES, MAX_REPLY_BYTES)
    code = f"TIMEOUT, DIRECTORY, NAME, LIMIT, REPLY = {settings!r}" + CLIENT
    return f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -c {shlex.quote(code)} "$@"\n'


class Channel:
    """Serves one item's oracle in ``directory`` (the item's scratch directory) while it is open: ``with
    Channel(oracle, scratch) as channel`` then ``channel.command`` is what ``$SGFS_ASK`` names."""

    def __init__(self, oracle: Oracle, directory: Path) -> None:
        self.oracle = oracle
        self.socket_path = str(directory / SOCKET_NAME)
        self.command = str(directory / CLIENT_NAME)
        self.directory = directory
        self._stop = threading.Event()
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Channel:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # Bound through the directory's descriptor: the address stays short however deep the directory lies
            # (the client connects by a relative path, from the directory).
            directory = os.open(self.directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                address = f"/proc/self/fd/{directory}/{SOCKET_NAME}"
                if len(os.fsencode(address)) > MAX_SOCKET_PATH:  # never with a descriptor number; checked anyway
                    raise ChannelError(
                        f"the clarification socket address {address} is longer than a Unix socket allows"
                    )
                server.bind(address)
            finally:
                os.close(directory)
            server.listen(4)
            server.settimeout(ACCEPT_POLL_S)
            script = Path(self.command)
            script.write_text(client_script(self.socket_path), encoding="utf-8")
            script.chmod(0o555)
        except OSError as exc:
            server.close()
            raise ChannelError(f"cannot open the clarification channel: {exc.strerror or exc}") from None
        except ChannelError:
            server.close()
            raise
        self._server = server
        self._thread = threading.Thread(target=self._serve, name="sgfs-ask", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(JOIN_TIMEOUT_S)  # bounded: every wait in the thread is
        if self._server is not None:
            self._server.close()
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)

    def _serve(self) -> None:
        server = self._server
        assert server is not None
        while not self._stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            with connection, contextlib.suppress(OSError):
                self._answer(connection)

    def _answer(self, connection: socket.socket) -> None:
        """Reads one question (to the client's end of writing, at most MAX_QUESTION_BYTES, within
        CONNECTION_TIMEOUT_S) and sends the oracle's reply."""
        deadline = time.monotonic() + CONNECTION_TIMEOUT_S
        chunks: list[bytes] = []
        size = 0
        while size < MAX_QUESTION_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                return  # a client that trickles its question is not answered (and used up nothing)
            connection.settimeout(left)
            chunk = connection.recv(MAX_QUESTION_BYTES - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        question = b"".join(chunks).decode("utf-8", "replace")
        connection.sendall(self.oracle.ask(question).encode("utf-8")[:MAX_REPLY_BYTES])
