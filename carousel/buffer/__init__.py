"""The disk buffer's files: where each staged file lives (`layout`), how bytes written by the library land
there verified and atomically (`landing`), and how they leave. No SQL: the rows are carousel.db's."""
