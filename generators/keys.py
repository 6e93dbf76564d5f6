"""Universe keys: a 256-bit secret that makes every repository and question a function of (key, seed).

Without a key, repository ``seed`` is the open universe's, which anyone with sgfs can compute. With one, each
seed gets a *salt*, ``HMAC-SHA256(key, "sgfs universe" + seed)`` in hex, recorded in the spec as
``universe``; every root random stream is then named by the salt as well as the seed (``generators.rng``
``root_stream``). The salt of one seed reveals nothing about the key or the salt of any other seed, so a spec
(which holds its salt) can be shown without exposing the rest of the universe. The key itself is never stored
in a spec, a record or a log; its *fingerprint* (a domain-separated SHA-256 prefix) names it in run records.

A key file is 64 lowercase hexadecimal characters and a newline, mode 0600 (``sgfs key new FILE``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
from dataclasses import dataclass, field

KEY_BYTES = 32
MAX_KEY_FILE = 1024  # a key file is 65 bytes; anything much longer is not one
SALT_RE = re.compile(r"[0-9a-f]{64}\Z")
_KEY_TEXT_RE = re.compile(r"[0-9a-f]{64}\Z")
_SALT_DOMAIN = b"sgfs universe\x00"
_FINGERPRINT_DOMAIN = b"sgfs key fingerprint\x00"


class KeyFileError(ValueError):
    """A key file that is missing, unreadable or malformed, or one that cannot be written."""


@dataclass(frozen=True)
class Key:
    """A loaded universe key. ``repr`` shows the fingerprint only, never the secret."""

    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise KeyFileError(f"a key is {KEY_BYTES} bytes, not {len(self.secret)}")

    @property
    def fingerprint(self) -> str:
        """16 hex characters naming the key; computing the key (or any salt) from it is infeasible."""
        return hashlib.sha256(_FINGERPRINT_DOMAIN + self.secret).hexdigest()[:16]

    def salt(self, seed: int) -> str:
        """Repository ``seed``'s universe salt: 64 hex characters, a function of (key, seed) only."""
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"invalid seed {seed!r}")
        return hmac.new(self.secret, _SALT_DOMAIN + str(seed).encode("ascii"), hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        return f"Key(fingerprint={self.fingerprint})"

    # -- files -------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Key:
        """The key in ``path``; one :class:`KeyFileError` (a single line) when it is missing, unreadable or not
        a key file."""
        try:
            # O_NONBLOCK: a FIFO in the key's place must not hang the command; only a regular file is read.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise KeyFileError(f"invalid key file {os.fspath(path)}: not a regular file")
                raw = os.read(fd, MAX_KEY_FILE + 1)
            finally:
                os.close(fd)
        except OSError as exc:
            raise KeyFileError(f"cannot read key file {os.fspath(path)}: {exc.strerror or exc}") from None
        try:
            text = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            text = ""
        if len(raw) > MAX_KEY_FILE or _KEY_TEXT_RE.fullmatch(text) is None:
            raise KeyFileError(
                f"invalid key file {os.fspath(path)}: expected 64 lowercase hexadecimal characters "
                "(write one with `sgfs key new FILE`)"
            )
        return cls(bytes.fromhex(text))

    @classmethod
    def new(cls, path: str | os.PathLike[str]) -> Key:
        """Draw a fresh key and write it to ``path`` (created, mode 0600); an existing file is never replaced."""
        key = cls(secrets.token_bytes(KEY_BYTES))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise KeyFileError(f"{os.fspath(path)} already exists: a key file is never overwritten") from None
        except OSError as exc:
            raise KeyFileError(f"cannot create key file {os.fspath(path)}: {exc.strerror or exc}") from None
        try:
            os.fchmod(fd, 0o600)  # whatever the umask did
            os.write(fd, (key.secret.hex() + "\n").encode("ascii"))
        except OSError as exc:
            os.close(fd)
            os.unlink(path)
            raise KeyFileError(f"cannot write key file {os.fspath(path)}: {exc.strerror or exc}") from None
        os.close(fd)
        return key


def exposed(path: str | os.PathLike[str]) -> bool:
    """Whether the key file ``path`` is readable by its group or by others (a published key is fine to use)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IRGRP | stat.S_IROTH))
