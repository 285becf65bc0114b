"""Several replicas behind a router, simulated together in time (issue 25.2).

Each replica runs its own general loop (`engine_loop.EngineLoop`, the one implementation of the
iteration) on its own K/V cache. At each arrival, in arrival order, every replica is advanced to the
arrival time (`EngineLoop.run(until=arrival_s)`: an iteration in flight then ends later, as on a real
server), the router reads their state and hands the request to one (`EngineLoop.enqueue`):

- `round-robin`: replica i mod R;
- `least-loaded`: the fewest requests in the system (running + queued), ties to the lowest index;
- `prefix-affinity`: the replica whose prefix cache holds the longest leading run of the request's
  blocks (`PrefixCache.lookup`), ties to the least loaded (needs prefix caching).

After the last arrival each replica runs to its end. Load imbalance: the most requests one replica
served / the mean over replicas (1 is perfectly even).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from llm_cost.errors import InvalidValueError, check_choice, check_number
from llm_cost.serving.run_stats import RunStats
from llm_cost.serving.serve_result import ServeResult

ROUTERS = ("round-robin", "least-loaded", "prefix-affinity")
ROUTED = ("fast_prefix",)  # the fast paths (`engine.FAST_PATHS`) whose loops a router drives (enqueue, run(until))


@dataclass(frozen=True)
class FleetResult:
    """A fleet's run: one `ServeResult` per replica (its own requests), the router, where each request
    went. Seconds, requests, tokens."""

    router: str
    replicas: tuple  # a `ServeResult` per replica that was handed requests
    assignment: tuple  # the replica index of each request, in arrival order
    fleet: ServeResult  # every request, the replicas' statistics summed (busy seconds over all replicas)
    replica_count: int = 1

    @property
    def requests_per_replica(self) -> tuple:
        """Requests each replica was handed, every replica in order (0 for one handed none; `replicas`
        holds results only for those handed some)."""
        counts = [0] * self.replica_count
        for index in self.assignment:
            counts[index] += 1
        return tuple(counts)

    @property
    def imbalance(self) -> float:
        """Most requests on one replica / the mean per replica (1: even)."""
        counts = self.requests_per_replica
        return max(counts) / (sum(counts) / len(counts)) if sum(counts) else 1.0

    @property
    def prefix_token_hit_rate(self) -> float:
        """Prompt tokens found cached / looked up, over the fleet (a fraction)."""
        return self.fleet.prefix_token_hit_rate


def workload_subset(workload, idx: list):
    """The requests `idx` of `workload` as a workload of their own (a replica's share)."""
    pick = lambda column: tuple(column[req] for req in idx)  # noqa: E731
    return replace(workload, unit_arrivals=pick(workload.unit_arrivals), prompt=pick(workload.prompt),
                   output=pick(workload.output), declared_gen=pick(workload.declared_gen),
                   prefix=pick(workload.prefix) if workload.prefix is not None else None)


def route_one(router: str, loops, request: int, arrival: int) -> int:
    """The replica the router hands `request` to (the `arrival`-th arrival). Prefix-affinity reads the
    request's block keys from the first replica's cache, the same in every one (`PrefixCache.share_keys`)."""
    if router == "round-robin":
        return arrival % len(loops)
    if router == "least-loaded":
        return min(range(len(loops)), key=lambda index: (loops[index].state.in_system, index))
    keys = loops[0].cache.keys_of(request)
    best, most, load = 0, -1, 0
    for index, loop in enumerate(loops):  # the longest cached prefix, ties to the least loaded, then the lowest index
        hits = loop.cache.hits(keys)
        if hits > most or (hits == most and loop.state.in_system < load):
            best, most, load = index, hits, loop.state.in_system
    return best


def serve_fleet(workload, replica, config, replicas: int, router: str = "round-robin", *,
                on_progress=None, fast: bool = True) -> FleetResult:
    """Serve `workload` on `replicas` copies of `replica` behind `router` (module doc), each copy with
    its own engine under `config`; a `FleetResult`. Every request is checked as `serve` checks it
    (`engine.checked`). `fast` (default) runs each replica by a fast path a router can drive (`ROUTED`)
    where `serve`'s allow-lists choose it (`engine.path_of`: the same schedule); False always by the
    general loop. `scheduler="request"` is refused (a router hands requests to iteration-level loops).

    >>> from llm_cost.serving.replica import IterationCost, Replica
    >>> from llm_cost.serving.serve_config import ServeConfig
    >>> from llm_cost.serving.workload import fixed_workload
    >>> wl = fixed_workload([(4, 5)] * 4)
    >>> f = serve_fleet(wl, Replica(IterationCost.unit(), 100, 2048), ServeConfig(reservation="paged"), 2)
    >>> f.assignment, f.requests_per_replica, f.fleet.finish_s
    ((0, 1, 0, 1), (2, 2), (5.0, 5.0, 5.0, 5.0))
    """
    from llm_cost.serving.engine import checked, path_of
    from llm_cost.serving.engine_loop import EngineLoop
    from llm_cost.serving.fast_prefix import PrefixReplica

    check_number("replicas", replicas, low=1, integer=True)
    router = check_choice("router", router, ROUTERS)
    if router == "prefix-affinity" and not config.prefix_caching:
        raise InvalidValueError("router prefix-affinity reads the replicas' prefix caches: give prefix_caching",
                                params=("router", "prefix_caching"))
    if workload.concurrency is not None:
        raise InvalidValueError("a fleet routes open-loop arrivals; give no concurrency", params=("concurrency",))
    res = checked(workload, replica, config)  # serve's own checks, of every request
    path = path_of(workload, replica, config, fast=ROUTED if fast else False)  # serve's allow-lists choose
    if path == "request_level":
        raise InvalidValueError("a fleet routes requests to iteration-level engines: give scheduler iteration",
                                params=("scheduler",))
    engine = PrefixReplica if path == "fast_prefix" else EngineLoop
    loops = [engine(workload, replica, config, res) for _ in range(replicas)]
    for loop in loops:
        loop.routed()
        if loop.cache is not None:
            loop.cache.share_keys(loops[0].cache)
    requests = len(workload)
    every = max(1, requests // 100)
    assignment = [0] * requests
    for arrival, (request, arrival_s) in enumerate(zip(range(requests), workload.arrival_s)):
        for loop in loops:
            ls = loop.state
            if ls.t < arrival_s and (ls.running or ls.waiting or loop.flights or loop.swapped):
                loop.run(until=arrival_s)  # otherwise it would return at once: at arrival_s already, or nothing to run
        chosen = route_one(router, loops, request, arrival)
        assignment[request] = chosen
        loops[chosen].enqueue(request, arrival_s)
        if on_progress and arrival % every == 0:
            on_progress(sum(lp.state.finished for lp in loops), requests)
    for loop in loops:
        loop.run()
    if on_progress:
        on_progress(requests, requests)
    return fleet_result(workload, replica, config, router, loops, assignment)


def fleet_result(workload, replica, config, router, loops, assignment) -> FleetResult:
    """Each replica's `ServeResult` over its own requests, and the fleet's over all of them (the
    replicas' statistics summed, `RunStats.__add__`; positions needed by `run_stats.positions_needed`
    from each request's own replica, deadlocked or not)."""
    per, total = [], RunStats()
    requests = len(workload)
    first, fin = [math.nan] * requests, [math.nan] * requests
    generated, prefilled = [0] * requests, [0] * requests
    for index, loop in enumerate(loops):
        idx = [req for req, at in enumerate(assignment) if at == index]
        state = loop.state
        for req in idx:
            first[req], fin[req] = state.first[req], state.fin[req]
            generated[req], prefilled[req] = state.gen[req], state.pre[req]
        total = total + state.stats
        if idx:
            sub = workload_subset(workload, idx)
            per.append(ServeResult.build(sub, replica, config, [state.arr[req] for req in idx],
                                         [state.first[req] for req in idx], [state.fin[req] for req in idx], state.stats,
                                         state.deadlock, generated=[state.gen[req] for req in idx],
                                         prefilled=[state.pre[req] for req in idx]))
    deadlock = next((lp.state.deadlock for lp in loops if lp.state.deadlock), None)
    fleet = ServeResult.build(workload, replica, config, list(workload.arrival_s), first, fin, total, deadlock,
                              generated=generated, prefilled=prefilled)
    return FleetResult(router, tuple(per), tuple(assignment), fleet, len(loops))
