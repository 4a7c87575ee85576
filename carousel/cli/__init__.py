"""The `carousel` command: one Typer app (app.py) and a module per command family."""
