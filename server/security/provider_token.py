"""AuthenticationProviderToken: JWTs signed with tokenSecretKey (HS256) or by the private half
of tokenPublicKey (tokenPublicAlg, RS256 by default; ES256 ...). The role is the
tokenAuthClaim claim ("sub"); an `exp` claim makes the connection re-authenticate (AUTH_CHALLENGE).
PyJWT verifies (a pyproject dependency: signature checks are not ours to write)."""

from __future__ import annotations

import jwt

from server.errors import AuthenticationError

from .authentication import Identity
from .config import SecurityConfig
from .keys import public_key, read_setting

BEARER = "Bearer "


class TokenProvider:
    method = "token"

    def __init__(self, config: SecurityConfig) -> None:
        if config.token_secret_key:
            self._key = read_setting(config.token_secret_key, "tokenSecretKey")
            self._algorithms = ["HS256", "HS384", "HS512"]
        elif config.token_public_key:
            self._key = public_key(read_setting(config.token_public_key, "tokenPublicKey"), "tokenPublicKey")
            self._algorithms = [config.token_public_alg]
        else:
            raise ValueError("AuthenticationProviderToken needs tokenSecretKey or tokenPublicKey")
        self._claim = config.token_auth_claim or "sub"
        self._audience = config.token_audience or None
        self._audience_claim = config.token_audience_claim or "aud"

    async def authenticate(self, data: bytes, peercert: dict | None) -> Identity:
        token = data.decode("utf-8", "replace").strip().removeprefix(BEARER)
        if not token:
            raise AuthenticationError("No token credentials passed")
        return self.identity(token)

    def identity(self, token: str) -> Identity:
        try:
            claims = jwt.decode(token, self._key, algorithms=self._algorithms,
                                options={"verify_aud": False, "require": []})
        except jwt.ExpiredSignatureError:
            raise AuthenticationError("Failed to authentication token: JWT expired") from None
        except jwt.InvalidTokenError as exc:
            raise AuthenticationError(f"Failed to authentication token: {exc}") from None
        if self._audience is not None:
            audience = claims.get(self._audience_claim)
            audiences = audience if isinstance(audience, list) else [audience]
            if self._audience not in audiences:
                raise AuthenticationError("Failed to authentication token: Audiences in token are not matched")
        role = claims.get(self._claim)
        if not isinstance(role, str) or not role:
            raise AuthenticationError(f"Failed to authentication token: no {self._claim!r} claim")
        expires = claims.get("exp")
        return Identity(role, float(expires) if isinstance(expires, (int, float)) else None)
