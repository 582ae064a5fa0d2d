"""Compute-node agent: collectors gather, the monitor assembles the report,
controllers act, the reconciler keeps recorded changes applied, the manager
serves (see doc/source/architecture.rst)."""
