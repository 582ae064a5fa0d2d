"""Who takes memory next and who gives it, for utility's greedy loop.

Each round of the loop moves memory from the guest whose next granule
costs least to the guest whose next MiB saves most, and changes only
those two. Scanning every guest of the host each round made planning a
5,000-host audit mostly this; here each guest is priced once per size it
reaches and kept in two heaps (takers by slope, donors by loss), entries
of a size the guest has left dropped when they come up. The choice is
the scan's: the largest slope (the first guest by UUID among equals), the
smallest loss of any other guest (likewise).
"""

import heapq


class Exchange:
    """Takers and donors of one host at their current sizes.

    ``curves``: {uuid: ValueCurve}; ``delta``: {uuid: MiB moved so far},
    updated by the caller, who then calls :meth:`moved`; ``up`` and
    ``down``: {uuid: MiB each may take or give in all}.
    """

    def __init__(self, curves, delta, up, down, g_mb):
        self.curves, self.delta = curves, delta
        self.up, self.down, self.g_mb = up, down, g_mb
        self._takers, self._donors = [], []
        for uuid in delta:
            self._price(uuid)

    def _price(self, uuid):
        d = self.delta[uuid]
        if d >= 0 and self.up[uuid] - d >= self.g_mb:
            slope, seg_left = self.curves[uuid].hull_at(
                d, self.up[uuid] - d)
            left = min(self.up[uuid] - d, max(seg_left, self.g_mb))
            heapq.heappush(self._takers, (-slope, uuid, d, left))
        if d <= 0 and self.down[uuid] + d >= self.g_mb:
            loss = self.curves[uuid].loss_at(-d, self.g_mb)
            heapq.heappush(self._donors, (loss, uuid, d))

    def moved(self, *uuids):
        """Price again the guests whose ``delta`` changed."""
        for uuid in uuids:
            self._price(uuid)

    def best_taker(self):
        """(uuid, gain per MiB, MiB at that gain within its room) or Nones."""
        while self._takers:
            negative, uuid, d, left = self._takers[0]
            if self.delta[uuid] == d:
                return uuid, -negative, left
            heapq.heappop(self._takers)
        return None, 0.0, 0

    def pass_over(self, taker):
        """Take ``taker`` (the best, :meth:`best_taker`) off the takers.

        No donor could serve it at a profit, and none will this plan:
        donors only grow dearer as they give, and its gain stays.
        """
        if self._takers and self._takers[0][1] == taker:
            heapq.heappop(self._takers)

    def cheapest_donor(self, taker):
        """(uuid, loss per MiB, MiB it may still give) or Nones."""
        if taker is None:
            return None, 0.0, 0
        found, passed = (None, 0.0, 0), []
        while self._donors:
            loss, uuid, d = self._donors[0]
            if self.delta[uuid] != d:
                heapq.heappop(self._donors)
            elif uuid == taker:
                passed.append(heapq.heappop(self._donors))
            else:
                found = uuid, loss, self.down[uuid] + d
                break
        for entry in passed:
            heapq.heappush(self._donors, entry)
        return found
