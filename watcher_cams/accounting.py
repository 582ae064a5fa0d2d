"""KSM-aware memory accounting of one host.

How much memory the host has, what its guests were promised (max) and hold
now (actual), what KSM saves now and per guest, and how much more may be
promised safely. Capacity follows the guards (watcher_cams.policy.guards):
RAM - reserved + the KSM savings that exist now times (1 - safety factor),
because merged pages can be unshared at any moment (papers 4 and 5).

The agent checks every growth against ``promisable_mb``; the strategies and
the Nova extension read the same numbers, so all of them agree on what
"the host is full" means.
"""

import dataclasses
from typing import Mapping

from watcher_cams.policy import guards
from watcher_cams.policy import model


@dataclasses.dataclass(frozen=True)
class HostAccount:
    ram_mb: int
    reserved_mb: int
    guests_max_mb: int
    guests_actual_mb: int
    ksm_saved_mb: float
    ksm_promisable_mb: int
    capacity_mb: int
    merged_pages: Mapping = dataclasses.field(default_factory=dict)
    page_size: int = 4096

    @property
    def headroom_mb(self) -> int:
        """Capacity left after what the guests hold now (may be negative)."""
        return self.capacity_mb - self.guests_actual_mb

    @property
    def promisable_mb(self) -> int:
        """Memory that may be given to guests now, on top of what they hold."""
        return max(0, self.headroom_mb)

    @property
    def overcommit_mb(self) -> int:
        """Flavor memory promised beyond RAM - reserved (negative: spare)."""
        return self.guests_max_mb - (self.ram_mb - self.reserved_mb)

    def merged_mb(self, uuid) -> float:
        """Memory of guest ``uuid`` merged by KSM now."""
        return self.merged_pages.get(uuid, 0) * self.page_size / (1 << 20)

    def may_grow(self, delta_mb) -> bool:
        """Whether the guests' total may change by ``delta_mb`` now.

        A host already beyond capacity may shrink but not grow (the rule
        of guards.finalize).
        """
        return delta_mb <= 0 or delta_mb <= self.headroom_mb

    def resized(self, delta_mb):
        """This account after the guests' total changed by ``delta_mb``.

        For a batch of changes checked against one collection: each grow
        sees what the shrinks before it freed.
        """
        return dataclasses.replace(
            self, guests_actual_mb=self.guests_actual_mb + int(delta_mb))

    def as_dict(self):
        data = dataclasses.asdict(self)
        data['merged_pages'] = dict(self.merged_pages)
        data.update(headroom_mb=self.headroom_mb,
                    promisable_mb=self.promisable_mb,
                    overcommit_mb=self.overcommit_mb)
        return data


def account(host: model.HostView, cfg: guards.GuardConfig,
            merged_pages=None) -> HostAccount:
    """The account of ``host`` under the guard settings ``cfg``."""
    ksm = host.ksm
    return HostAccount(
        ram_mb=host.ram_mb,
        reserved_mb=max(host.reserved_mb, cfg.host_reserved_mb),
        guests_max_mb=sum(g.max_mb for g in host.guests),
        guests_actual_mb=sum(g.actual_mb for g in host.guests),
        ksm_saved_mb=ksm.saved_mb if ksm else 0.0,
        ksm_promisable_mb=guards.safe_ksm_mb(host, cfg),
        capacity_mb=guards.capacity_mb(host, cfg),
        merged_pages=dict(merged_pages or {}),
        page_size=ksm.page_size if ksm else 4096)
