"""Database: SQLAlchemy models, engine and sessions, the one transaction helper, queries."""
