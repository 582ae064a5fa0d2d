"""The devices the agent needs in each instance's libvirt guest config.

Nova adds a balloon only while [libvirt] mem_stats_period_seconds > 0 and
always turns on autodeflate and free page reporting; it adds the guest agent
channel only for images with hw_qemu_guest_agent=yes. The extension makes
both devices the node's policy instead of the image's.
"""

from nova.virt.libvirt import config as vconfig

AGENT_CHANNEL = 'org.qemu.guest_agent.0'
BALLOON_TYPES = ('qemu', 'kvm')


class MemoryBalloon(vconfig.LibvirtConfigMemoryBalloon):
    """A virtio balloon whose autodeflate and free page reporting are set."""

    def __init__(self, period, autodeflate=False, free_page_reporting=False):
        super().__init__()
        self.model = 'virtio'
        self.period = period
        self.autodeflate = autodeflate
        self.free_page_reporting = free_page_reporting

    def format_dom(self):
        # Skip the parent's format_dom, which always writes both as 'on'.
        dev = vconfig.LibvirtConfigGuestDevice.format_dom(self)
        dev.set('model', self.model)
        dev.set('autodeflate', 'on' if self.autodeflate else 'off')
        dev.set('freePageReporting',
                'on' if self.free_page_reporting else 'off')
        stats = dev.makeelement('stats', {'period': str(self.period)})
        dev.append(stats)
        return dev


def has_agent_channel(guest):
    return any(isinstance(dev, vconfig.LibvirtConfigGuestChannel)
               and dev.target_name == AGENT_CHANNEL for dev in guest.devices)


def set_balloon(guest, opts):
    """Replace Nova's balloon (or its 'none' model) with the node's one."""
    guest.devices = [dev for dev in guest.devices if not isinstance(
        dev, vconfig.LibvirtConfigMemoryBalloon)]
    guest.add_device(MemoryBalloon(
        opts.balloon_stats_period, autodeflate=opts.balloon_autodeflate,
        free_page_reporting=opts.balloon_free_page_reporting))


def apply(guest, opts, virt_type, add_agent_channel):
    """Adjust Nova's guest config ``guest`` to the [watcher_cams_nova] options.

    ``add_agent_channel(guest)`` is Nova's own way of adding the channel
    (its socket path is Nova's naming), called only when it is missing.
    """
    if virt_type not in BALLOON_TYPES:
        return
    if opts.memory_balloon:
        set_balloon(guest, opts)
    if opts.guest_agent_channel and not has_agent_channel(guest):
        add_agent_channel(guest)
