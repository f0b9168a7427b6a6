"""AuthenticationProviderBasic: `user:password` checked against an htpasswd file (basicAuthConf:
a path, or Pulsar's data:/file:/base64 forms).

Pulsar reads `$apr1$` (Apache MD5) hashes and crypt(3) ones. Checks are done by tools, never by
code of ours: `openssl passwd -apr1` for apr1, the bcrypt package for `$2a$/$2b$/$2y$` (which
Pulsar itself does not accept, taken here as well), and the C library's crypt(3) (the stdlib
`crypt` module) for DES, MD5, SHA-256 and SHA-512 crypt. Results are cached, so a client
re-sending its password costs no new hashing.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import subprocess
import warnings

import bcrypt

from server.errors import AuthenticationError

from .authentication import Identity
from .config import SecurityConfig
from .keys import read_setting

CACHE_SIZE = 1024


def read_htpasswd(text: str) -> dict[str, str]:
    users: dict[str, str] = {}
    for line in text.splitlines():
        user, sep, hashed = line.strip().partition(":")
        if sep and user and not user.startswith("#"):
            users[user] = hashed.strip()
    return users


def check_password(password: str, hashed: str) -> bool:
    """Blocking: run off the event loop."""
    if hashed.startswith("$apr1$"):
        salt = hashed.split("$")[2]
        computed = subprocess.run(["openssl", "passwd", "-apr1", "-salt", salt, "-stdin"], input=password,
                                  capture_output=True, text=True, check=False).stdout.strip()
    elif hashed.startswith(("$2a$", "$2b$", "$2y$")):
        return bcrypt.checkpw(password.encode(), hashed.encode())
    else:
        computed = _crypt(password, hashed)
    return bool(computed) and hmac.compare_digest(computed, hashed)


def _crypt(password: str, hashed: str) -> str:
    """The C library's crypt(3) through the stdlib module, imported only for such a hash: it is
    deprecated and gone from Python 3.13, where these hashes cannot be checked (the broker still
    starts, and apr1 and bcrypt hashes work)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt
    except ImportError:
        raise AuthenticationError("crypt(3) password hashes need Python's crypt module (Python < 3.13); "
                                  "use apr1 or bcrypt hashes") from None
    return crypt.crypt(password, hashed) or ""


class BasicProvider:
    method = "basic"

    def __init__(self, config: SecurityConfig) -> None:
        if not config.basic_auth_conf:
            raise ValueError("AuthenticationProviderBasic needs basicAuthConf")
        self._users = read_htpasswd(read_setting(config.basic_auth_conf, "basicAuthConf").decode())
        self._verified: dict[tuple[str, bytes], bool] = {}

    async def authenticate(self, data: bytes, peercert: dict | None) -> Identity:
        user, sep, password = data.decode("utf-8", "replace").partition(":")
        if not sep:
            raise AuthenticationError("Basic credentials must be user:password")
        hashed = self._users.get(user)
        if hashed is None:
            raise AuthenticationError("User not exist")
        key = (user, hashlib.sha256(f"{hashed}\0{password}".encode()).digest())
        ok = self._verified.get(key)
        if ok is None:
            ok = await asyncio.get_running_loop().run_in_executor(None, check_password, password, hashed)
            if len(self._verified) >= CACHE_SIZE:
                self._verified.clear()
            self._verified[key] = ok
        if not ok:
            raise AuthenticationError("Not matching password")
        return Identity(user)
