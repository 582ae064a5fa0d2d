"""Small builders of policy views for the tests."""

import uuid as uuid_lib

from watcher_cams.lab import example
from watcher_cams.policy import model
from watcher_cams.policy import report

MB = 1024


def uid(n):
    return str(uuid_lib.UUID(int=n))


def sample(t=1000.0, total_mb=2048, used_mb=256, active_mb=0, inactive_mb=0,
           committed_mb=None, pgpgin_mb=0, refault=0, activate=0, psi=None,
           majfault=0):
    committed_mb = used_mb if committed_mb is None else committed_mb
    return model.GuestSample(
        timestamp=t, mem_total_kb=total_mb * MB,
        mem_available_kb=(total_mb - used_mb) * MB,
        cached_kb=(active_mb + inactive_mb) * MB,
        active_file_kb=active_mb * MB, inactive_file_kb=inactive_mb * MB,
        committed_as_kb=committed_mb * MB, pgpgin_kb=pgpgin_mb * MB,
        pgmajfault=majfault, workingset_refault_file=refault,
        workingset_activate_file=activate, psi_some_avg10=psi)


# What a reader that re-reads its data read since it booted (MiB): utility
# grows a guest no further than the data it read (cache_window.read_room_mb).
READ_FAR_MB = 16384


def guest(n, actual_mb=2048, max_mb=4096, used_mb=256, active_mb=None,
          inactive_mb=None, read_mb_s=0.0, refault_s=0.0, activate_s=0.0,
          interval=60.0, psi=None, read_since_boot_mb=0, **kw):
    """A guest with two samples ``interval`` apart and the given rates.

    ``read_since_boot_mb``: what it read before the first sample.
    """
    cache = max(0, actual_mb - used_mb)
    active_mb = cache // 2 if active_mb is None else active_mb
    inactive_mb = cache - active_mb if inactive_mb is None else inactive_mb
    common = dict(total_mb=actual_mb, used_mb=used_mb, active_mb=active_mb,
                  inactive_mb=inactive_mb, psi=psi)
    prev = sample(t=1000.0, pgpgin_mb=read_since_boot_mb, **common)
    cur = sample(t=1000.0 + interval,
                 pgpgin_mb=read_since_boot_mb + int(read_mb_s * interval),
                 refault=int(refault_s * interval),
                 activate=int(activate_s * interval), **common)
    return model.GuestView(uuid=uid(n), name='g%d' % n, max_mb=max_mb,
                           actual_mb=actual_mb, sample=cur, previous=prev,
                           **kw)


def host(guests, ram_mb=None, reserved_mb=0, ksm=None, **kw):
    """A host; by default its guests hold all it may promise.

    Then memory moves between guests only, as on the simulator's hosts:
    a test that wants the host's free memory in play sizes ``ram_mb``.
    """
    if ram_mb is None:
        ram_mb = reserved_mb + sum(g.actual_mb for g in guests)
    return model.HostView(name='cmp-a', ram_mb=ram_mb,
                          reserved_mb=reserved_mb, guests=tuple(guests),
                          ksm=ksm, **kw)


def pages_s(mb_s):
    """Pages per second for MiB per second."""
    return mb_s * 256


def example_deltas(planner):
    """{VM1/VM2: MiB moved} by ``planner(host)`` on the CAMS example."""
    ex = example.PaperExample()
    plan = planner(report.parse_host(ex.report()))
    by = {m.instance: m.delta_mb for m in plan.moves}
    return by.get(ex.VM1, 0), by.get(ex.VM2, 0)
