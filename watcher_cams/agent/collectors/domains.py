"""What libvirt knows about each running guest.

Nova names a libvirt domain's UUID after its instance, so the domain UUID
is the instance UUID; the name and flavor memory come from Nova's metadata
in the domain XML when it is there (lab guests carry the same element).
"""

import dataclasses
import os
from xml.etree import ElementTree

import libvirt

NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'
PID_DIR = '/run/libvirt/qemu'


@dataclasses.dataclass
class Domain:
    uuid: str
    domain_name: str
    name: str
    max_mb: int
    actual_mb: int
    vcpus: int
    flavor_mb: int = None
    balloon: dict = dataclasses.field(default_factory=dict)
    host_cpus: int = 1
    vcpu_cpus: list = dataclasses.field(default_factory=list)
    emulator_cpus: list = dataclasses.field(default_factory=list)
    qemu_pid: int = None
    disks: list = dataclasses.field(default_factory=list)
    # CPU time the domain has run (ns, libvirt's virDomainGetInfo: its
    # vCPUs and QEMU's own threads).
    cpu_ns: int = None
    # Emulated by TCG (domain type 'qemu'), not run by KVM.
    tcg: bool = False
    dom: object = dataclasses.field(default=None, repr=False, compare=False)


def cpus_of(mask):
    """CPU numbers set in a libvirt pin-info tuple of booleans."""
    return [cpu for cpu, on in enumerate(mask) if on]


def qemu_pid(domain_name, pid_dir=PID_DIR):
    try:
        with open(os.path.join(pid_dir, domain_name + '.pid')) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _nova_metadata(root):
    meta = root.find('metadata/{%s}instance' % NOVA_NS)
    if meta is None:
        return None, None
    name = meta.findtext('{%s}name' % NOVA_NS)
    memory = meta.findtext('{%s}flavor/{%s}memory' % (NOVA_NS, NOVA_NS))
    try:
        memory = int(memory) if memory is not None else None
    except ValueError:
        memory = None
    return name, memory


def _disks(dom, root):
    disks = []
    for disk in root.findall('devices/disk'):
        target = disk.find('target')
        if target is None or disk.get('device', 'disk') != 'disk':
            continue
        dev = target.get('dev')
        driver = disk.find('driver')
        entry = {'dev': dev,
                 'cache': driver.get('cache', 'default')
                 if driver is not None else 'default'}
        try:
            rd_req, rd_bytes, wr_req, wr_bytes, _ = dom.blockStats(dev)
            entry.update(rd_req=rd_req, rd_bytes=rd_bytes, wr_req=wr_req,
                         wr_bytes=wr_bytes)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                raise
        disks.append(entry)
    return disks


def describe(dom, pid_dir=PID_DIR):
    """A Domain for one running libvirt domain.

    Raises libvirt.libvirtError (VIR_ERR_NO_DOMAIN when it vanished).
    """
    root = ElementTree.fromstring(dom.XMLDesc(0))
    nova_name, flavor_mb = _nova_metadata(root)
    state, max_kib, cur_kib, vcpus, cpu_ns = dom.info()
    balloon = dom.memoryStats()
    actual_kib = balloon.get('actual', cur_kib)
    domain_name = dom.name()
    pins = dom.vcpuPinInfo(0)
    return Domain(
        uuid=dom.UUIDString(),
        domain_name=domain_name,
        name=nova_name or domain_name,
        max_mb=max_kib // 1024,
        actual_mb=actual_kib // 1024,
        vcpus=vcpus,
        flavor_mb=flavor_mb,
        balloon=dict(balloon),
        host_cpus=len(pins[0]) if pins else 1,
        vcpu_cpus=[cpus_of(m) for m in pins],
        emulator_cpus=cpus_of(dom.emulatorPinInfo(0)),
        qemu_pid=qemu_pid(domain_name, pid_dir),
        disks=_disks(dom, root),
        cpu_ns=cpu_ns,
        tcg=root.get('type') == 'qemu',
        dom=dom)


def running(conn):
    """Running domains (libvirt domain objects)."""
    return conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)
