"""watcher-cams: cache-aware memory management for KVM clouds."""
