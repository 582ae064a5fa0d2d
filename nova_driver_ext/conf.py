"""Options of the Nova driver extension, read by nova-compute from nova.conf.

The guards (``[watcher_cams_guards]``, e.g. the KSM safety factor) are the
same options the agent and the strategies read, so the inventory promises
no more of the KSM savings than the agent would.
"""

from oslo_config import cfg

from watcher_cams.conf import guards as guards_conf

GROUP = cfg.OptGroup(
    'watcher_cams_nova',
    title='watcher-cams Nova driver extension',
    help='Set [DEFAULT] compute_driver = watcher_cams.CamsLibvirtDriver to '
         'use it: Nova\'s libvirt driver, with guest devices for the '
         'watcher-cams agent, records that follow Nova\'s moves, and an '
         'optional KSM-aware memory inventory.')

OPTS = [
    cfg.BoolOpt('memory_balloon', default=True,
                help='Give every instance a virtio memory balloon with a '
                     'statistics period, whatever [libvirt] '
                     'mem_stats_period_seconds says. The agent moves memory '
                     'and reads the guest\'s counters through it.'),
    cfg.IntOpt('balloon_stats_period', default=10, min=1,
               help='Seconds between the balloon\'s memory statistics '
                    'updates in the guest.'),
    cfg.BoolOpt('balloon_autodeflate', default=False,
                help='Let the guest deflate the balloon itself when it runs '
                     'out of memory. Off by default: the agent\'s floors '
                     'already keep each guest above what it commits, and a '
                     'guest that deflates silently undoes the audit\'s '
                     'decision. Nova alone turns it on.'),
    cfg.BoolOpt('balloon_free_page_reporting', default=False,
                help='Let the guest report free pages to the host, which '
                     'then reclaims them. Lowers the host\'s use, but the '
                     'host\'s free memory then moves with the guests\' free '
                     'memory. Nova alone turns it on.'),
    cfg.BoolOpt('guest_agent_channel', default=True,
                help='Give every instance the QEMU guest agent channel, not '
                     'only those whose image sets hw_qemu_guest_agent=yes. '
                     'The agent reads the page cache counters through it; '
                     'a guest without a running qemu-ga is reported as such '
                     'and left alone.'),
    cfg.StrOpt('agent_state_dir', default='/var/lib/watcher-cams',
               help='The watcher-cams agent\'s state directory on this node '
                    '(its [watcher_cams_compute] state_dir). nova-compute '
                    'forgets the agent\'s targets there when Nova moves, '
                    'resizes or rebuilds an instance, so it needs write '
                    'access: run both as the same user or give both a group '
                    'with write access to the directory.'),
    cfg.BoolOpt('ksm_inventory', default=False,
                help='Report the MEMORY_MB inventory as physical RAM plus '
                     'the memory KSM saves now, less [watcher_cams_guards] '
                     'ksm_safety_factor of it. Risk: merged pages can be '
                     'unshared at any moment (a guest writes to them), and '
                     'instances placed on savings then need memory the host '
                     'does not have. Use only with swap or the agent\'s '
                     'balloon guards. Only with ram_allocation_ratio = 1.0.'),
    cfg.IntOpt('ksm_inventory_step_mb', default=256, min=1,
               help='The savings are reported in whole multiples of this '
                    '(MiB), so small changes do not update Placement.'),
    cfg.IntOpt('ksm_inventory_rise_after', default=600, min=0,
               help='Seconds the savings must stay at a higher step before '
                    'the inventory rises to it. A fall is reported at the '
                    'next update, because savings that are gone must not be '
                    'promised.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)
    guards_conf.register_opts(conf)


def list_opts():
    return [(GROUP, OPTS)] + guards_conf.list_opts()
