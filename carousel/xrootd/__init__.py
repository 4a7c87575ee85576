"""The program XRootD runs for prepare requests."""
