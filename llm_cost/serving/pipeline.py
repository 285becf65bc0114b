"""The engine's pipeline (`EngineLoop.pipeline`): iterations in flight across a pass's stages.

One stage: an iteration lands when its pass ends and the next starts then. More stages (`PassCost.stages`,
a deployment's pp) under `ServeConfig.pipeline`:

- ``orca``: Orca's pipeline; an iteration takes its pass's time to land, the next starts one stage-time
  (dt / stages) later, so `stages` batches are in flight, each up to max_batch sequences (`hold`);
- ``microbatch``: the pass is timed as micro-batches over the stages (`iteration_stages`, passed to
  `iteration.iteration_time`); the next iteration starts when this one lands;
- ``serial``: stages one after another, the next iteration when this one lands.

`flights` is the heap of iterations in flight, (lands at, launch number, decoders, gamma, prefills); the
loop completes those that landed (`landed`) before it composes the next iteration, and waits for the next
landing when nothing else can run (`next_landing`).
"""

from __future__ import annotations

import heapq


class Pipeline:
    """Iterations in flight over `stages` stages under `mode` (`ServeConfig.pipeline`); module doc."""

    def __init__(self, stages: int, mode: str, max_batch: int) -> None:
        self.stages = stages
        self.overlapped = stages > 1 and mode == "orca"  # the next iteration a stage-time later
        self.microbatched = stages > 1 and mode == "microbatch"
        self.iteration_stages = stages if self.microbatched else 1  # what `iteration_time` splits a pass into
        self.hold = max_batch * stages if self.overlapped else max_batch  # sequences running at most
        self.flights: list = []

    def send(self, now: float, seconds: float, launch: int, decoders, gamma: int, prefills) -> float:
        """An iteration of `seconds` in flight from `now`; the seconds until the next may start."""
        heapq.heappush(self.flights, (now + seconds, launch, decoders, gamma, prefills))
        return seconds / self.stages if self.overlapped else seconds

    def landed(self, now: float):
        """The iterations in flight that have landed by `now`, earliest first, each taken off the heap."""
        flights = self.flights
        while flights and flights[0][0] <= now:
            yield heapq.heappop(flights)

    def next_landing(self) -> float:
        """When the earliest iteration in flight lands (the heap must not be empty)."""
        return self.flights[0][0]
