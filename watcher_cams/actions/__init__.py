"""Watcher actions of watcher-cams; each calls its node's agent over RPC."""
