"""Watcher strategies of watcher-cams, one per module."""
