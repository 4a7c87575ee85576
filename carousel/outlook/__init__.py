"""For users: why a request waits, how many files the library reads before it, and when it should be done,
from the policy's own plans projected forward on the library's cost figures (docs/admin.md)."""
