"""Whether a public key can verify a signature of the algorithm a token names, asked before verifying.

PyJWT given a key of the wrong type for the token's algorithm (an RSA key for `ES256`, say) raises a
TypeError, not one of its own errors: a forged header would crash authentication. Each algorithm family
is matched with its key type here, and an elliptic-curve algorithm with its one curve.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

_CURVES: dict[str, type[ec.EllipticCurve]] = {
    "ES256": ec.SECP256R1,
    "ES256K": ec.SECP256K1,
    "ES384": ec.SECP384R1,
    "ES512": ec.SECP521R1,
}


def key_fits(algorithm: str, key: Any) -> bool:
    """True when `key` (a cryptography public key) is the kind `algorithm` verifies with."""
    if algorithm.startswith(("RS", "PS")):
        return isinstance(key, rsa.RSAPublicKey)
    if algorithm in _CURVES:
        return isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, _CURVES[algorithm])
    if algorithm == "EdDSA":
        return isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey)
    return False
