"""Authentication: bearer tokens (JWTs from configured issuers, a static list), X.509 subjects forwarded by a
trusted TLS proxy, and anonymous calls when the settings allow them. It turns a credential into a Caller."""
