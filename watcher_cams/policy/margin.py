"""The Balloon Controller: target = Committed_AS + a learned margin.

Paper mode (papers.md, section 4). Per guest the controller keeps a margin
and a two-state machine, updated once per audit cycle (the paper updates the
margin every 5 s and sets the balloon every 1 s; here both happen once per
cycle, so run continuous audits with a short interval):

- UP: if the cache size changed or Active(file) grew, the margin grows by
  ``up_mb`` times the number of consecutive UP steps (a step is at most
  ``max_step_mb``); once the cache stops changing, switch to DOWN.
- DOWN: while the cache does not grow and Active(file) does not shrink, the
  margin shrinks by ``down_mb`` times the consecutive DOWN steps (at most
  ``max_step_mb``), never below ``min_margin_mb``; the first decrease after
  UP instead cuts a margin larger than the cache down to the cache size. If
  Active(file) shrank (the useful cache no longer fits) or the cache grew
  (new IO), switch to UP.

"Changed" means by more than ``change_mb``; the paper counts any change (0).
A guest whose full cache churns still shows a changing Cached figure: kswapd
reclaims in batches between its free-memory watermarks. The paper's
controller ignored the host's physical memory; here every target passes the
host-capacity guard like any other plan.
"""

import dataclasses

from watcher_cams.policy import guards
from watcher_cams.policy import model

UP = 'up'
DOWN = 'down'


@dataclasses.dataclass(frozen=True)
class MarginParams:
    up_mb: int = 25
    down_mb: int = 50
    max_step_mb: int = 200
    min_margin_mb: int = 100
    initial_margin_mb: int = 100
    change_mb: int = 0

    def __post_init__(self):
        for name, value in dataclasses.asdict(self).items():
            if not isinstance(value, int) or value < 0:
                raise ValueError('%s must be a non-negative integer' % name)
        if self.initial_margin_mb < self.min_margin_mb:
            raise ValueError('initial_margin_mb is below min_margin_mb')


@dataclasses.dataclass(frozen=True)
class MarginState:
    mode: str = UP
    margin_mb: int = 100
    streak: int = 0
    cache_mb: float = 0.0
    active_mb: float = 0.0
    seen: bool = False

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data, params):
        """State from a stored dict; a damaged one restarts the controller.

        The state comes back through the agent, so it is checked like any
        other input rather than trusted.
        """
        fresh = cls(margin_mb=params.initial_margin_mb)
        if not isinstance(data, dict):
            return fresh
        try:
            state = cls(mode=data['mode'], margin_mb=int(data['margin_mb']),
                        streak=int(data['streak']),
                        cache_mb=float(data['cache_mb']),
                        active_mb=float(data['active_mb']),
                        seen=bool(data['seen']))
        except (KeyError, TypeError, ValueError):
            return fresh
        if (state.mode not in (UP, DOWN) or state.streak < 0
                or not 0 <= state.margin_mb <= 1 << 30
                or not 0 <= state.cache_mb < 1 << 40
                or not 0 <= state.active_mb < 1 << 40):
            return fresh
        return state


def step(state: MarginState, sample: model.GuestSample,
         params: MarginParams) -> MarginState:
    """Advance one guest's controller by one observation."""
    cache, active = sample.file_lru_mb, sample.active_file_mb
    if not state.seen:
        return dataclasses.replace(state, cache_mb=cache, active_mb=active,
                                   seen=True)
    d_cache = cache - state.cache_mb
    d_active = active - state.active_mb
    tol = params.change_mb
    margin, mode, streak = state.margin_mb, state.mode, state.streak
    if mode == UP:
        if abs(d_cache) > tol or d_active > tol:
            streak += 1
            margin += min(params.up_mb * streak, params.max_step_mb)
        else:
            mode, streak = DOWN, 0
    elif d_cache > tol or d_active < -tol:
        mode, streak = UP, 0
    elif streak == 0 and margin > cache:
        # First decrease right after UP: a margin above the whole cache
        # cannot be useful, so start probing down from the cache size.
        streak, margin = 1, int(cache)
    else:
        streak += 1
        margin -= min(params.down_mb * streak, params.max_step_mb)
    margin = max(params.min_margin_mb, margin)
    return MarginState(mode, int(margin), streak, cache, active, True)


def plan(host: model.HostView, cfg: guards.GuardConfig,
         params: MarginParams = MarginParams(), state_key='margin'):
    """Targets Committed_AS + margin for every guest with data.

    The new controller states are returned in ``Plan.policy_state`` keyed
    by instance uuid, for the caller to persist.
    """
    proposals, states = {}, {}
    for g in sorted(host.guests, key=lambda g: g.uuid):
        if not g.has_guest_counters:
            continue
        old = MarginState.from_dict(g.policy_state.get(state_key), params)
        new = step(old, g.sample, params)
        states[g.uuid] = {state_key: new.to_dict()}
        target = g.sample.committed_mb + new.margin_mb
        proposals[g.uuid] = (target, 'margin: Committed_AS %d MiB + margin '
                             '%d MiB (%s)' % (g.sample.committed_mb,
                                              new.margin_mb, new.mode))
    result = model.Plan(host.name, moves=guards.finalize(host, proposals, cfg))
    result.policy_state = states
    return result
