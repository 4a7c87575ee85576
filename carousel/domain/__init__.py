"""Pure domain: states, value objects, clocks and errors. Imports nothing of ours."""
