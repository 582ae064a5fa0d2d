"""Place guests that share many KSM-merged pages on the same LLC.

Paper (papers.md, section 2): the sharing rate of guest i with guest j is
the pages of i merged with pages of j over the pages i uses; pairs with the
highest rate go to the same processor first. Here a pair's rate is the mean
of its two directed rates, and a domain is a last-level cache whose
capacity is its shared host CPUs times ``cpu_allocation_ratio`` vCPUs (so
placement also keeps the CPU load balanced, an open issue in the paper).

1. Greedy pairing, as in the paper.
2. Improvement by local search: move one guest or swap two while the merged
   pages kept inside one LLC grow and capacities hold.
3. For small inputs (at most ``exact_limit`` movable guests) the exact best
   assignment by enumeration, preferring fewer changes on ties.

Guests with dedicated CPUs, outside the audit's scope or skipped for a
problem are never moved; they stay where their CPUs are and still attract
the guests they share with. Guests that share no merged
page stay as they are (a pinned one still counts in its LLC's load), and
among equally good placements the one with fewer changes and then the
least loaded busiest LLC wins. A host with one LLC has
nothing to gain and gets no plan.
"""

import dataclasses
import itertools

from watcher_cams.policy import model


@dataclasses.dataclass(frozen=True)
class AffinityParams:
    cpu_allocation_ratio: float = 4.0
    exact_limit: int = 8
    max_rounds: int = 50

    def __post_init__(self):
        if not self.cpu_allocation_ratio > 0:
            raise ValueError('cpu_allocation_ratio must be > 0')
        if self.exact_limit < 0 or self.max_rounds < 0:
            raise ValueError('exact_limit and max_rounds must be >= 0')


def sharing_rate(host, a, b):
    """Mean of the two directed sharing rates of guests ``a`` and ``b``."""
    pages = host.sharing.get(model.pair_key(a.uuid, b.uuid), 0)
    rates = [pages / g.ram_pages for g in (a, b) if g.ram_pages > 0]
    return sum(rates) / 2 if rates else 0.0


def _domain_cpus(host, domain):
    shared = set(host.shared_cpus)
    cpus = [c for c in domain.cpus if not shared or c in shared]
    return tuple(sorted(cpus))


def _current_domain(guest, domains):
    """Domain all of a guest's vCPUs are confined to, or None."""
    allowed = set()
    for vcpu_cpus in guest.cpus:
        allowed |= set(vcpu_cpus)
    for d in domains:
        if allowed and allowed <= set(d.cpus):
            return d.name
    return None


class _Problem:
    def __init__(self, host, params):
        self.host = host
        self.domains = [d for d in host.llc_domains if _domain_cpus(host, d)]
        self.capacity = {d.name: len(_domain_cpus(host, d))
                         * params.cpu_allocation_ratio for d in self.domains}
        self.weight = {}
        self.adjacent = {}
        for key, pages in host.sharing.items():
            if pages > 0:
                self.weight[key] = pages
                a, b = key
                self.adjacent.setdefault(a, {})[b] = pages
                self.adjacent.setdefault(b, {})[a] = pages
        self.movable = []
        self.base_load = dict.fromkeys(self.capacity, 0)
        self._sort_guests(host)
        self.current = {g.uuid: _current_domain(g, self.domains)
                        for g in self.movable}
        self.vcpus = {g.uuid: g.vcpus for g in self.movable}

    def _sort_guests(self, host):
        """Fill ``fixed``, ``movable`` and ``base_load`` from the guests.

        A guest the audit may not move (dedicated CPUs, outside the audit's
        scope, or skipped for a problem) stays; where it is confined it
        still attracts the guests it shares with. A guest that shares
        nothing with a guest the plan can place or sees fixed has nothing
        to gain from a place: it stays too (the CI cloud once pinned one
        of two fresh guests for the pages it shared with a third guest
        outside the audit), so no guest is pinned for no merged page.
        """
        guests = sorted(host.guests, key=lambda g: g.uuid)
        where = {g.uuid: _current_domain(g, host.llc_domains) for g in guests}
        stays = {g.uuid for g in guests if g.dedicated_cpus or g.problem}
        self.fixed = {u: where[u] for u in stays if where[u] is not None}
        placeable = ({g.uuid for g in guests} - stays) | set(self.fixed)
        for g in guests:
            partners = set(self.adjacent.get(g.uuid, ())) - {g.uuid}
            if g.uuid not in stays and partners & placeable:
                self.movable.append(g)
            elif not g.dedicated_cpus and where[g.uuid] in self.base_load:
                # Dedicated CPUs lie outside the shared CPUs counted here.
                self.base_load[where[g.uuid]] += g.vcpus

    def pulls(self, assign):
        """{uuid: {domain: merged pages it shares with guests there}}."""
        table = {u: dict.fromkeys(self.capacity, 0) for u in assign}
        for u in assign:
            for v, w in self.adjacent.get(u, {}).items():
                d = assign.get(v, self.fixed.get(v))
                if d in table[u]:
                    table[u][d] += w
        return table

    def load(self, assign):
        load = dict(self.base_load)
        for uuid, d in assign.items():
            load[d] += self.vcpus[uuid]
        return load

    def fits(self, assign):
        load = self.load(assign)
        return all(load[d] <= self.capacity[d] for d in load)

    def kept(self, assign):
        where = dict(self.fixed)
        where.update(assign)
        return sum(w for (a, b), w in self.weight.items()
                   if a in where and where.get(a) == where.get(b))

    def changes(self, assign):
        return sum(1 for u, d in assign.items() if self.current.get(u) != d)

    def busiest(self, assign):
        """The highest load / capacity of any LLC."""
        load = self.load(assign)
        return max(load[d] / self.capacity[d] for d in load)


def _greedy(p, rates):
    """The paper's pairing: highest-rate pairs first onto one LLC."""
    assign = {}
    load = dict(p.base_load)

    def free(d):
        return p.capacity[d] - load[d]

    def put(uuid, d):
        assign[uuid] = d
        load[d] += p.vcpus[uuid]

    def where(uuid):
        return assign.get(uuid, p.fixed.get(uuid))

    for _, a, b in rates:
        placed = [u for u in (a, b) if where(u) is not None]
        loose = [u for u in (a, b) if where(u) is None and u in p.vcpus]
        if len(loose) == 2:
            need = p.vcpus[a] + p.vcpus[b]
            for d in sorted(p.capacity, key=lambda d: (-free(d), d)):
                if free(d) >= need:
                    put(a, d)
                    put(b, d)
                    break
        elif len(loose) == 1 and len(placed) == 1:
            d = where(placed[0])
            if d in p.capacity and free(d) >= p.vcpus[loose[0]]:
                put(loose[0], d)
    for g in p.movable:
        if g.uuid not in assign:
            put(g.uuid, max(sorted(p.capacity), key=free))
    return assign


def _local_search(p, assign, rounds):
    """Moves and swaps that keep more merged pages inside one LLC."""
    assign = dict(assign)
    load = p.load(assign)
    pull = p.pulls(assign)
    uuids = sorted(assign)

    def move(u, d):
        old = assign[u]
        load[old] -= p.vcpus[u]
        load[d] += p.vcpus[u]
        assign[u] = d
        for v, w in p.adjacent.get(u, {}).items():
            if v in pull:
                pull[v][old] -= w
                pull[v][d] += w

    for _ in range(rounds):
        improved = False
        for u in uuids:
            here = assign[u]
            for d in sorted(p.capacity):
                if (d != here and load[d] + p.vcpus[u] <= p.capacity[d]
                        and pull[u][d] > pull[u][here]):
                    move(u, d)
                    improved = True
                    break
        for u, v in itertools.combinations(uuids, 2):
            a, b = assign[u], assign[v]
            if a == b:
                continue
            if (load[b] - p.vcpus[v] + p.vcpus[u] > p.capacity[b]
                    or load[a] - p.vcpus[u] + p.vcpus[v] > p.capacity[a]):
                continue
            w = p.adjacent.get(u, {}).get(v, 0)
            gain = (pull[u][b] - pull[u][a] + pull[v][a] - pull[v][b]
                    - 2 * w)
            if gain > 0:
                move(u, b)
                move(v, a)
                improved = True
        if not improved:
            break
    return assign


def _exact(p):
    names = sorted(p.capacity)
    uuids = [g.uuid for g in p.movable]
    best, best_key = None, None
    for combo in itertools.product(names, repeat=len(uuids)):
        assign = dict(zip(uuids, combo))
        if not p.fits(assign):
            continue
        # Ties: fewer changes, then the CPU load spread best.
        key = (p.kept(assign), -p.changes(assign), -p.busiest(assign))
        if best_key is None or key > best_key:
            best, best_key = assign, key
    return best


def plan(host: model.HostView,
         params: AffinityParams = AffinityParams()) -> model.Plan:
    result = model.Plan(host.name)
    p = _Problem(host, params)
    if len(p.domains) < 2 or not p.movable:
        if len(host.llc_domains) == 1:
            # One LLC: every merged page is already shared inside it.
            result.sharing_total_pages = sum(p.weight.values())
            result.sharing_kept_pages = result.sharing_total_pages
        result.notes.append('affinity: fewer than two LLC domains with '
                            'shared CPUs, or nothing to move')
        return result
    guests = {g.uuid: g for g in host.guests}
    rates = sorted(((sharing_rate(host, guests[a], guests[b]), a, b)
                    for (a, b) in p.weight if a in guests and b in guests),
                   key=lambda r: (-r[0], r[1], r[2]))
    assign = _greedy(p, rates)
    assign = _local_search(p, assign, params.max_rounds)
    small = (len(p.movable) <= params.exact_limit
             and len(p.capacity) ** len(p.movable) <= 20000)
    if small:
        exact = _exact(p)
        if exact is not None:
            assign = exact
    total = sum(w for (a, b), w in p.weight.items()
                if a in guests and b in guests)
    result.sharing_total_pages = total
    result.sharing_kept_pages = p.kept(assign)
    cpus = {d.name: _domain_cpus(host, d) for d in p.domains}
    for g in p.movable:
        target = assign[g.uuid]
        if p.current.get(g.uuid) == target:
            continue
        partners = sorted(
            (w, other) for (a, b), w in p.weight.items()
            for other in ((b,) if a == g.uuid else (a,) if b == g.uuid
                          else ())
            if assign.get(other, p.fixed.get(other)) == target)
        reason = ('affinity: %s shares %d merged pages with guests on LLC %s'
                  % (g.name or g.uuid, sum(w for w, _ in partners), target))
        result.pins.append(model.AffinityChange(
            host.name, g.uuid, cpus[target], target, reason))
    return result
