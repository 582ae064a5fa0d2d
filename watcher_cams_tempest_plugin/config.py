"""The tempest options of watcher-cams ([watcher_cams] in tempest.conf)."""

from oslo_config import cfg

service_option = cfg.BoolOpt(
    'watcher_cams', default=False,
    help='Whether watcher-cams is deployed: its Watcher plugin on the '
         'Watcher nodes and watcher-cams-agent on the compute nodes. The '
         'tests of this plugin are skipped unless it is.')

group = cfg.OptGroup(
    name='watcher_cams', title='watcher-cams options',
    help='Where the scenario tests boot their servers and how they look '
         'inside them.')

opts = [
    cfg.StrOpt('compute_host',
               help='The compute node (its name in Nova) on which the '
                    'scenario tests boot their servers. It must run '
                    'watcher-cams-agent. Scenario tests are skipped when '
                    'it is not set.'),
    cfg.StrOpt('libvirt_uri',
               help='A libvirt URI of compute_host\'s libvirtd that the '
                    'tempest node can open, e.g. '
                    'qemu+ssh://root@compute-1/system. The scenario tests '
                    'start the guests\' readers through the QEMU guest '
                    'agent and read balloon sizes and vCPU pinning '
                    'through it.'),
    cfg.StrOpt('image_ref',
               help='The image the scenario tests boot: a guest with the '
                    'QEMU guest agent running and cams-reader on its PATH '
                    '(the lab\'s guest image, tools/guest-image.sh). '
                    'Defaults to [compute] image_ref.'),
    cfg.IntOpt('flavor_ram_mb', default=768, min=256,
               help='Memory of the cache scenario\'s flavor: the most a '
                    'guest\'s balloon may give it.'),
    cfg.IntOpt('boot_mb', default=448, min=256,
               help='What the cache scenario sizes both guests to before '
                    'its audit starts (an actuator plan of cams_balloon '
                    'actions); must be below flavor_ram_mb.'),
    cfg.IntOpt('data_gb', default=2, min=1,
               help='Size of the cache scenario\'s ephemeral disk, which '
                    'the guests\' readers read; it should exceed what '
                    'either guest can cache.'),
    cfg.IntOpt('audit_interval', default=30, min=10,
               help='Interval in seconds of the continuous audits.'),
    cfg.IntOpt('scenario_timeout', default=480, min=60,
               help='How long a scenario test waits for the actions it '
                    'expects, in seconds.'),
]
