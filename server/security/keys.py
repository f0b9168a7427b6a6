"""Key and file settings in Pulsar's forms: `data:[;base64],...`, `file:///path`, `env:NAME`,
or base64 text (tokenSecretKey, tokenPublicKey, basicAuthConf).

PyJWT and `cryptography` (pyproject dependencies) verify signatures and parse keys: never
hand-written crypto.
"""

from __future__ import annotations

import base64
import binascii
import os
from urllib.parse import unquote, urlsplit

from cryptography.hazmat.primitives import serialization


def read_setting(value: str, key: str) -> bytes:
    """The bytes a setting names; ValueError naming the key when they cannot be read."""
    value = value.strip()
    try:
        if value.startswith("data:"):
            meta, _, data = value[5:].partition(",")
            return base64.b64decode(data) if meta.endswith(";base64") else unquote(data).encode()
        if value.startswith("file:"):
            with open(unquote(urlsplit(value).path), "rb") as f:
                return f.read()
        if value.startswith("env:"):
            text = os.environ.get(value[4:])
            if text is None:
                raise ValueError(f"environment variable {value[4:]} is not set")
            return base64.b64decode(text, validate=True)
        if os.path.isfile(value):
            with open(value, "rb") as f:
                return f.read()
        return base64.b64decode(value, validate=True)
    except (OSError, binascii.Error, ValueError) as exc:
        raise ValueError(f"{key}: cannot read {value[:40]!r}: {exc}") from None


def public_key(data: bytes, key: str):
    """A public key as `pulsar tokens create-key-pair` writes it (DER), or PEM."""
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            return serialization.load_pem_public_key(data)
        return serialization.load_der_public_key(data)
    except ValueError as exc:
        raise ValueError(f"{key}: not a public key ({exc})") from None


def private_key(data: bytes, key: str):
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            return serialization.load_pem_private_key(data, None)
        return serialization.load_der_private_key(data, None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{key}: not a private key ({exc})") from None
