"""The scheduling cycle: snapshot, plan, claim, dispatch, record."""
