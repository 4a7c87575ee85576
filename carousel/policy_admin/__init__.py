"""Policy administration: the active scheduling policy read and changed at run time, each change validated
by building the policy and recorded in an audit trail; dry runs on the live queue; replays of recorded
requests (docs/admin.md)."""
