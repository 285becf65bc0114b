"""Run independent tasks in parallel: in this process, in N local processes, or as Ray tasks.

`run_tasks(fn, tasks, jobs=..., ray=...)` returns `[fn(t) for t in tasks]` in task order, whatever
the order they finish in; `fn` must be a module-level function and each task picklable. A task's
result depends on the task alone (each carries its own seed), so every executor gives the same
results bit for bit. Ray is imported only when `ray=` is given (`pip install 'llm-cost[ray]'`).
On KeyboardInterrupt the results finished so far are kept: `Interrupted.done` maps index -> result.
"""

from __future__ import annotations

import os

from llm_cost.errors import InvalidValueError, check_number


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during `run_tasks`: `done` holds {task index: result} of the tasks that finished."""

    def __init__(self, done: dict) -> None:
        super().__init__(f"interrupted after {len(done)} task(s)")
        self.done = done


def default_jobs() -> int:
    """All the cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_tasks(fn, tasks, *, jobs: int | None = None, ray: str | None = None, on_done=None) -> list:
    """`[fn(t) for t in tasks]`, computed by `jobs` local processes (None: all cores; 1: this
    process) or as Ray tasks on the cluster at `ray` (an address or "auto"); `on_done(done, total)`
    after each task finishes."""
    tasks = list(tasks)
    if ray is not None:
        return _run_ray(fn, tasks, ray, on_done)
    jobs = default_jobs() if jobs is None else jobs
    check_number("jobs", jobs, low=1, high=1024, integer=True)
    done: dict = {}
    try:
        if jobs == 1 or len(tasks) <= 1:
            for i, t in enumerate(tasks):
                done[i] = fn(t)
                _tick(on_done, len(done), len(tasks))
        else:
            _run_pool(fn, tasks, min(int(jobs), len(tasks)), done, on_done)
    except KeyboardInterrupt:
        raise Interrupted(done) from None
    return [done[i] for i in range(len(tasks))]


def _tick(on_done, done: int, total: int) -> None:
    if on_done is not None:
        on_done(done, total)


def _run_pool(fn, tasks, jobs: int, done: dict, on_done) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = multiprocessing.get_context("spawn" if os.name == "nt" else "fork")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    try:
        futures = {pool.submit(fn, t): i for i, t in enumerate(tasks)}
        for f in as_completed(futures):
            done[futures[f]] = f.result()
            _tick(on_done, len(done), len(tasks))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def _run_ray(fn, tasks, address: str, on_done) -> list:
    try:
        import ray as ray_module
    except ImportError:
        raise InvalidValueError("--ray needs the ray extra: pip install 'llm-cost[ray]'", params=("ray",)) from None
    if not str(address).strip():
        raise InvalidValueError("ray must be a cluster address (host:port, ray://host:port) or auto", params=("ray",))
    if not ray_module.is_initialized():
        ray_module.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    remote = ray_module.remote(fn)
    refs = [remote.remote(t) for t in tasks]
    index = {r: i for i, r in enumerate(refs)}
    done: dict = {}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray_module.wait(pending, num_returns=1)
            for r in ready:
                done[index[r]] = ray_module.get(r)
            _tick(on_done, len(done), len(tasks))
    except KeyboardInterrupt:
        for r in pending:
            ray_module.cancel(r)
        raise Interrupted(done) from None
    return [done[i] for i in range(len(tasks))]
