"""Nova libvirt driver extension for balloon-managed, KSM-aware nodes.

nova-compute loads it as ``compute_driver = watcher_cams.CamsLibvirtDriver``
(the shim package nova/virt/watcher_cams). Options: [watcher_cams_nova].
"""
