"""`pulsard tokens`: Pulsar's `pulsar tokens` for this broker's token provider.

create-secret-key [--output F] [--base64]; create-key-pair --output-private-key F
--output-public-key F [-a RS256|ES256...]; create --secret-key K | --private-key K --subject S
[--expiry-time 1h] [-a ALG]; show [-f FILE | TOKEN]; validate --secret-key K | --public-key K
[-f FILE | TOKEN]. Keys in Pulsar's forms (file:///path, data:;base64,..., env:NAME, base64);
key files as Pulsar writes them (raw secret bytes, DER key pair). PyJWT and `cryptography`
do the signing and key generation.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import secrets
import sys
import time
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from .keys import private_key, public_key, read_setting

SECRET_KEY_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
EC_CURVES = {"ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}
#: Pulsar's relative time units (RelativeTimeUtil): s, m, h, d, w, y.
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_relative_time(text: str) -> int:
    match = re.fullmatch(r"(\d+)([smhdwy]?)", text.strip())
    if not match:
        raise ValueError(f"invalid relative time {text!r} (e.g. 30s, 10m, 1h, 2d, 1w, 1y)")
    return int(match.group(1)) * _UNITS[match.group(2) or "s"]


def _write(data: bytes, output: str | None) -> None:
    if output:
        Path(output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data + (b"\n" if data.isascii() else b""))


def create_secret_key(args: argparse.Namespace) -> None:
    key = secrets.token_bytes(SECRET_KEY_BYTES[args.algorithm])
    _write(base64.b64encode(key) if args.base64 else key, args.output)


def create_key_pair(args: argparse.Namespace) -> None:
    key = (rsa.generate_private_key(65537, 2048) if args.algorithm.startswith(("RS", "PS"))
           else ec.generate_private_key(EC_CURVES[args.algorithm]()))
    Path(args.output_private_key).write_bytes(key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    Path(args.output_public_key).write_bytes(key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))


def create(args: argparse.Namespace) -> None:
    if bool(args.secret_key) == bool(args.private_key):
        raise ValueError("give one of --secret-key and --private-key")
    claims: dict = {"sub": args.subject}
    if args.expiry_time:
        claims["exp"] = int(time.time()) + parse_relative_time(args.expiry_time)
    for header in args.headers or ():
        name, _, value = header.partition("=")
        claims[name] = value
    if args.secret_key:
        key, algorithm = read_setting(args.secret_key, "--secret-key"), args.algorithm or "HS256"
    else:
        key, algorithm = private_key(read_setting(args.private_key, "--private-key"), "--private-key"), \
            args.algorithm or "RS256"
    print(jwt.encode(claims, key, algorithm=algorithm))


def _token(args: argparse.Namespace) -> str:
    if args.stdin:
        return sys.stdin.read().strip()
    if args.token_file:
        return Path(args.token_file).read_text().strip()
    if args.token:
        return args.token.strip()
    raise ValueError("give a token, or -f FILE")


def show(args: argparse.Namespace) -> None:
    token = _token(args)
    print(json.dumps(jwt.get_unverified_header(token)))
    print(json.dumps(jwt.decode(token, options={"verify_signature": False})))


def validate(args: argparse.Namespace) -> None:
    if bool(args.secret_key) == bool(args.public_key):
        raise ValueError("give one of --secret-key and --public-key")
    token = _token(args)
    algorithm = jwt.get_unverified_header(token).get("alg", "")
    if args.secret_key:
        key, allowed = read_setting(args.secret_key, "--secret-key"), list(SECRET_KEY_BYTES)
    else:
        key = public_key(read_setting(args.public_key, "--public-key"), "--public-key")
        allowed = [a for a in (algorithm,) if not a.startswith("HS")]
    print(json.dumps(jwt.decode(token, key, algorithms=allowed)))


def add_tokens_parser(commands: argparse._SubParsersAction) -> None:
    tokens = commands.add_parser("tokens", help="create and check JWT tokens (as `pulsar tokens`)")
    actions = tokens.add_subparsers(dest="action", required=True)
    p = actions.add_parser("create-secret-key", help="a random HMAC key")
    p.add_argument("--output", "-o")
    p.add_argument("--base64", "-b", action="store_true", help="write it base64-encoded")
    p.add_argument("--signature-algorithm", "-a", dest="algorithm", default="HS256", choices=list(SECRET_KEY_BYTES))
    p.set_defaults(run=create_secret_key)
    p = actions.add_parser("create-key-pair", help="a private/public key pair (DER)")
    p.add_argument("--output-private-key", required=True)
    p.add_argument("--output-public-key", required=True)
    p.add_argument("--signature-algorithm", "-a", dest="algorithm", default="RS256",
                   choices=["RS256", "RS384", "RS512", *EC_CURVES])
    p.set_defaults(run=create_key_pair)
    p = actions.add_parser("create", help="a token for a subject")
    p.add_argument("--secret-key", "-sk")
    p.add_argument("--private-key", "-pk")
    p.add_argument("--subject", "-s", required=True)
    p.add_argument("--expiry-time", "-e", help="relative, e.g. 1h, 30d")
    p.add_argument("--signature-algorithm", "-a", dest="algorithm")
    p.add_argument("--headers", "-hs", action="append", help="extra claim name=value")
    p.set_defaults(run=create)
    for name, run in (("show", show), ("validate", validate)):
        p = actions.add_parser(name)
        p.add_argument("token", nargs="?")
        p.add_argument("--token-file", "-f")
        if name == "validate":
            p.add_argument("--secret-key", "-sk")
            p.add_argument("--public-key", "-pk")
        p.add_argument("--stdin", "-i", action="store_true", help="read the token from standard input")
        p.set_defaults(run=run)


def run_tokens(args: argparse.Namespace) -> int:
    try:
        args.run(args)
    except (ValueError, OSError, jwt.InvalidTokenError) as exc:
        print(f"pulsard tokens: {exc}", file=sys.stderr)
        return 1
    return 0
