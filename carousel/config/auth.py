"""Settings of authentication (the `auth` table of carousel's settings), read by carousel.auth."""

from __future__ import annotations

import re
from ipaddress import IPv4Network, IPv6Network
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Asymmetric signatures only, as the WLCG profile requires: an HMAC secret would have to be shared with
# every relying party, and "none" signs nothing.
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
ANY_AUDIENCE = "https://wlcg.cern.ch/jwt/v1/any"  # the profile's "valid for every relying party"
LOCAL_NAME = r"^[A-Za-z0-9_.@+-]{1,128}$"  # no ":", which only JWT callers' names ("issuer:sub") carry


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IssuerSettings(_Frozen):
    """One trusted token issuer. Its callers are named "<name>:<sub>"."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    issuer: str = Field(min_length=1, description="the `iss` claim, compared exactly")
    audiences: tuple[str, ...] = Field(min_length=1, description="one of these must be in `aud`")
    accept_any_audience: bool = True  # the profile's ANY_AUDIENCE value
    public_key_file: Path | None = None  # a PEM public key, or a JWKS document (JSON)
    jwks_url: str | None = None  # fetched and cached; a `kid` missing from the cache fetches again
    jwks_cache_s: int = Field(default=3600, gt=0)
    # An unknown `kid` fetches the document again, at most this often: garbage cannot hammer the issuer.
    jwks_refetch_cooldown_s: float = Field(default=30.0, ge=0)
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    leeway_s: int = Field(default=60, ge=0, le=600)  # clock skew allowed on `nbf` and `iat`
    base_path: str = "/"  # the issuer's area: its scopes' paths are inside it
    # Tokens without storage.* scopes: allowed everywhere in base_path when they assert one of these groups.
    group_access: tuple[str, ...] = ()
    admin_groups: tuple[str, ...] = ()  # a `wlcg.groups` entry that makes the caller an admin
    admin_scopes: tuple[str, ...] = ()  # a `scope` entry that makes the caller an admin

    @field_validator("algorithms")
    @classmethod
    def _asymmetric(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        refused = [alg for alg in value if alg not in ASYMMETRIC_ALGORITHMS]
        if refused or not value:
            raise ValueError(f"algorithms must be among {sorted(ASYMMETRIC_ALGORITHMS)}, not {refused}")
        return value

    @field_validator("base_path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/") or "/../" in value + "/":
            raise ValueError("base_path must be an absolute path without '..'")
        return re.sub(r"//+", "/", value).rstrip("/") or "/"

    @model_validator(mode="after")
    def _one_key_source(self) -> IssuerSettings:
        if (self.public_key_file is None) == (self.jwks_url is None):
            raise ValueError(f"issuer {self.name}: set exactly one of public_key_file and jwks_url")
        return self


class LocalIdentity(_Frozen):
    """A caller the site lists itself (a static token, an X.509 subject), with what it may do."""

    name: str = Field(pattern=LOCAL_NAME)
    groups: tuple[str, ...] = ()
    scopes: tuple[str, ...] = Field(
        default=("storage.stage:/",), description="WLCG storage scopes, e.g. storage.stage:/star"
    )
    admin: bool = False
    share_groups: bool = False  # sees and manages the requests of its groups, not only its own

    @field_validator("name")
    @classmethod
    def _not_anonymous(cls, value: str) -> str:
        if value == "anonymous":
            raise ValueError("'anonymous' is the name of callers without credentials")
        return value


class StaticToken(LocalIdentity):
    """A bearer token listed by its SHA-256 (hex): the token itself is never stored."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class X509Subject(LocalIdentity):
    subject: str = Field(min_length=1, description="the certificate subject as the proxy forwards it")


class X509ProxySettings(_Frozen):
    """Clients with certificates reach carousel through a TLS proxy that verifies them and forwards the
    subject in a header. The header is believed only on connections from `trusted_proxies`."""

    trusted_proxies: tuple[IPv4Network | IPv6Network, ...] = ()
    subject_header: str = "X-SSL-Client-S-DN"
    verify_header: str | None = "X-SSL-Client-Verify"  # must say SUCCESS; None: not checked
    subjects: tuple[X509Subject, ...] = ()


class AuthSettings(_Frozen):
    issuers: tuple[IssuerSettings, ...] = ()
    static_tokens: tuple[StaticToken, ...] = ()
    x509: X509ProxySettings = Field(default_factory=X509ProxySettings)

    @model_validator(mode="after")
    def _unique_names(self) -> AuthSettings:
        for what, names in (
            ("issuer name", [i.name for i in self.issuers]),
            ("issuer", [i.issuer for i in self.issuers]),
            ("static token name", [t.name for t in self.static_tokens]),
            ("static token sha256", [t.sha256 for t in self.static_tokens]),
            ("X.509 subject", [s.subject for s in self.x509.subjects]),
        ):
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    raise ValueError(f"{what} {name!r} appears twice")
                seen.add(name)
        return self

    @property
    def configured(self) -> bool:
        return bool(self.issuers or self.static_tokens or self.x509.subjects)
