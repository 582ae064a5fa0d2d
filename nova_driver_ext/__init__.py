"""Nova libvirt driver extension for balloon-managed, KSM-aware nodes.

Planned in the nova_driver_ext issue; this package holds no driver yet.
"""
