"""Mass-storage back-ends behind one small protocol (base.py)."""
