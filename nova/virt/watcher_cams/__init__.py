"""The name Nova loads: compute_driver = watcher_cams.CamsLibvirtDriver.

Nova imports compute drivers only from nova.virt, so this package is
installed there; the driver itself lives in nova_driver_ext.
"""

from nova_driver_ext.driver import CamsLibvirtDriver

__all__ = ['CamsLibvirtDriver']
