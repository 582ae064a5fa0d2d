"""Compute-node agent: collectors gather, controllers act, manager serves."""
