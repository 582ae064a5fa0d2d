"""Collection cost of the agent on real guests.

Boots ``guests`` tiny guests (tools/guest-image.sh), lets each read its data
file (page cache, KSM candidates), then runs ``cycles`` full collections
with the pairwise sharing matrix recomputed every cycle, and prints the
milliseconds per cycle and per guest; then the sharing matrix split into
reading page frames (pagemap + kpageflags, per GiB of guest RAM) and
intersecting them. Needs root, libvirt and the image (tools/host-setup.sh).

``fake_agents``: one real guest and that many domains that run no OS, whose
guest agents answer as the real one did (:mod:`watcher_cams.lab.
fake_agents`), some of them ``hung``: the collection of forty guests on a
machine where forty TCG guests do not boot.
"""

import os
import statistics
import tempfile
import time

from watcher_cams.lab import ksm_tuning
from watcher_cams.lab import tables

PREFIX = 'cams-bench-'


def _boot(conn, image, count, memory_mb, dtype, out, read_mb=None):
    from watcher_cams.lab import guests as lab_guests

    workdir = tempfile.mkdtemp(prefix=PREFIX)
    os.chmod(workdir, 0o755)  # QEMU runs as libvirt-qemu
    lab_guests.destroy_all(conn, PREFIX)
    started = time.monotonic()
    doms = []
    # One after the other: forty guests booting at once under TCG starve
    # each other's agents past any timeout.
    for i in range(count):
        dom = lab_guests.boot(conn, '%s%d' % (PREFIX, i), image, workdir,
                              memory_mb=memory_mb, dtype=dtype)
        lab_guests.wait_for_agent(dom, timeout=300)
        doms.append(dom)
        out('booted %d/%d guests (%.0f s)' % (i + 1, count,
                                              time.monotonic() - started))
    # What each guest reads fills its page cache: all of the data file, or
    # its first read_mb (forty guests under TCG read 140 MB each for long).
    command = ('cat /mnt/data >/dev/null' if read_mb is None else
               'head -c %d /mnt/data >/dev/null' % (read_mb << 20))
    for i, dom in enumerate(doms, 1):
        lab_guests.guest_exec(dom, command, timeout=300)
        out('guest %d/%d read its data' % (i, count))
    return doms


def run(guests=4, cycles=5, memory_mb=512, image_dir=None,
        uri='qemu:///system', dtype='qemu', out=print, ksm_wait=0,
        read_mb=None, fake_agents=0, hung=0):
    import libvirt

    from watcher_cams.lab import guests as lab_guests

    libvirt.registerErrorHandler(lambda *args: None, None)
    conn = libvirt.open(uri)
    image = lab_guests.GuestImage(image_dir)
    try:
        if fake_agents:
            return _run_fake(conn, image, fake_agents, hung, cycles,
                             memory_mb, dtype, uri, out)
        out('booting %d guests of %d MiB (%s)' % (guests, memory_mb, dtype))
        _boot(conn, image, guests, memory_mb, dtype, out, read_mb)
        if ksm_wait:
            with ksm_tuning.fast():
                out('KSM on (fast scan) for %d s' % ksm_wait)
                time.sleep(ksm_wait)
                return _measure(uri, cycles, out)
        return _measure(uri, cycles, out)
    finally:
        lab_guests.destroy_all(conn, PREFIX)


def _run_fake(conn, image, count, hung, cycles, memory_mb, dtype, uri, out):
    """One real guest, ``count`` with fake agents (``hung`` of them hung)."""
    from watcher_cams.agent.collectors import guest_agent
    from watcher_cams.lab import fake_agents

    out('booting 1 real guest and %d without an OS, %d MiB each (%s)'
        % (count, memory_mb, dtype))
    [real] = _boot(conn, image, 1, memory_mb, dtype, out, read_mb=16)
    shells = _boot_shells(conn, image, count, memory_mb, dtype, out)
    timings = []
    with fake_agents.answering({}, timings):
        files = fake_agents.real_files(real)
        for _ in range(5):
            guest_agent.collect(real)
    out('the real guest agent: %d commands, median %.1f ms, max %.1f ms; '
        'the fakes answer after one of these latencies, %d of them never'
        % (len(timings), statistics.median(timings) * 1000,
           max(timings) * 1000, hung))
    agents = {dom.UUIDString(): fake_agents.FakeGuestAgent(
        files, timings, hung=i < hung, seed=i)
        for i, dom in enumerate(shells)}
    with fake_agents.answering(agents):
        return _measure(uri, cycles, out)


def _boot_shells(conn, image, count, memory_mb, dtype, out):
    """``count`` domains that run no OS, each with a data disk overlay."""
    from watcher_cams.lab import fake_agents

    workdir = tempfile.mkdtemp(prefix=PREFIX)
    os.chmod(workdir, 0o755)  # QEMU runs as libvirt-qemu
    doms = [conn.createXML(fake_agents.SHELL_XML.format(
        dtype=dtype, name='%sshell-%d' % (PREFIX, i), memory_mb=memory_mb,
        disk=image.overlay('shell-%d' % i, workdir)), 0)
        for i in range(count)]
    out('%d domains without an OS running' % count)
    return doms


def _measure(uri, cycles, out):
    """Time the agent's collection cycles, then its sharing matrix."""
    from watcher_cams.agent import manager as agent_manager
    from watcher_cams import conf as cams_conf

    manager = agent_manager.AgentManager(cams_conf.isolated(
        state_dir=tempfile.mkdtemp(prefix=PREFIX), host='bench',
        connection_uri=uri, sharing_interval=0))
    figures, per_cycle_ms = _collection_cycles(manager, cycles, out)
    out('')
    out(tables.table(('figure', 'value'),
                     figures + _sharing_figures(manager)))
    return per_cycle_ms


def _collection_cycles(manager, cycles, out):
    """Run ``cycles`` collections and print them.

    Returns rows of their medians and the median cycle's milliseconds.
    """
    rows, per_cycle, per_guest, sharing_ms = [], [], [], []
    for cycle in range(1, cycles + 1):
        c = manager.get_report()['collection']
        guest_ms = (c['libvirt_ms'] + c['guest_agent_ms']) / max(
            1, c['guests'])
        per_cycle.append(c['total_ms'])
        per_guest.append(guest_ms)
        sharing_ms.append(c['sharing_ms'])
        rows.append((cycle, c['guests'], '%.1f' % c['libvirt_ms'],
                     '%.1f' % c['guest_agent_ms'], '%.1f' % guest_ms,
                     '%.1f' % c['sharing_ms'], '%.1f' % c['total_ms']))
        out('cycle %d/%d: %.0f ms' % (cycle, cycles, c['total_ms']))
    out('')
    out(tables.table(('cycle', 'guests', 'libvirt ms', 'guest agent ms',
                      'ms/guest', 'sharing ms', 'cycle ms'), rows))
    return [('median collection per cycle (ms)',
             '%.1f' % statistics.median(per_cycle)),
            ('median collection per guest (ms)',
             '%.1f' % statistics.median(per_guest)),
            ('median pairwise sharing (ms)',
             '%.1f' % statistics.median(sharing_ms))], statistics.median(
                 per_cycle)


def _sharing_figures(manager):
    """The sharing matrix, timed in its two parts: rows of figures."""
    from watcher_cams.agent.collectors import sharing

    _, domains = manager.collect()
    pids = {u: d.qemu_pid for u, d in domains.items()
            if d.name.startswith(PREFIX)}
    start = time.monotonic()
    frames = sharing.guest_ksm_frames(pids)
    read_s = time.monotonic() - start
    start = time.monotonic()
    pairs = sharing.pairwise(frames)
    pair_s = time.monotonic() - start
    ram_gib = sum(r for r, _ in frames.values()) * 4096 / 2 ** 30
    return [('frames read: pagemap + kpageflags (ms per GiB of guest RAM)',
             '%.1f' % (read_s * 1000 / max(ram_gib, 1e-9))),
            ('intersections for %d pairs (ms)'
             % (len(frames) * (len(frames) - 1) // 2),
             '%.2f' % (pair_s * 1000)),
            ('pairs sharing pages / KSM frames seen',
             '%d / %d' % (len(pairs), sum(len(k) for _, k in
                                          frames.values())))]
