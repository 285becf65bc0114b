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

MAX_JOBS = 1024  # local worker processes


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during `run_tasks` (or another loop of tasks): `done` holds {task index: result} of the
    tasks that finished, `total` how many there were (None: not said)."""

    def __init__(self, done: dict, total: int | None = None) -> None:
        super().__init__(f"interrupted after {len(done)} task(s)")
        self.done, self.total = done, total


def default_jobs() -> int:
    """All the cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_one_executor(jobs, ray) -> None:
    """Local processes (`jobs` > 1) or Ray (`ray`), not both: Ray runs the tasks where its cluster has
    room, so `jobs` would be silently ignored."""
    if ray is not None and jobs is not None and jobs != 1:
        raise InvalidValueError(f"jobs (local processes, got {jobs}) and ray (tasks on a Ray cluster) are two "
                                f"ways to run: give one of them, not both", params=("jobs", "ray"))


def run_tasks(fn, tasks, *, jobs: int | None = None, ray: str | None = None, on_done=None, weights=None) -> list:
    """`[fn(t) for t in tasks]`, computed by `jobs` local processes (None: all cores; 1: this
    process) or as Ray tasks on the cluster at `ray` (an address or "auto"); `on_done(done, total)`
    after each task finishes. `weights`: each task's expected cost (any unit); the processes take the
    heaviest first (longest processing time first: no long task starts last while the others idle)."""
    tasks = list(tasks)
    check_one_executor(jobs, ray)
    jobs = default_jobs() if jobs is None else jobs
    check_number("jobs", jobs, low=1, high=MAX_JOBS, integer=True)
    with TaskPool(1 if ray is not None else min(int(jobs), max(1, len(tasks))), ray=ray) as pool:
        return pool.map(fn, tasks, on_done=on_done, weights=weights)


class TaskPool:
    """`run_tasks` kept open over many calls: `map(fn, tasks)` returns `[fn(t) for t in tasks]` as
    `run_tasks(fn, tasks, jobs=, ray=)` does, but the `jobs` local processes start at the first map of
    more than one task and stay up (with whatever they cached) until `close` (a context manager). A
    fit that evaluates the same rows at hundreds of profiles pays the processes' start-up once."""

    def __init__(self, jobs: int | None = None, *, ray: str | None = None) -> None:
        check_one_executor(jobs, ray)
        jobs = default_jobs() if jobs is None else jobs
        check_number("jobs", jobs, low=1, high=MAX_JOBS, integer=True)
        self.jobs, self.ray, self._pool = int(jobs), ray, None

    def __enter__(self) -> "TaskPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self, cancel: bool = False) -> None:
        """Stop the local processes (`cancel`: at once, killing the tasks running and dropping those
        queued; a queued call cannot be cancelled, so after a Ctrl-C the processes would otherwise
        work through the whole queue before the process could exit)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            if cancel:
                terminate_workers(pool)
            pool.shutdown(wait=True, cancel_futures=cancel)

    def map(self, fn, tasks, *, on_done=None, weights=None) -> list:
        """`[fn(task) for task in tasks]` in task order (module doc); `on_done(done, total)` after each;
        `weights` as `run_tasks`'s."""
        tasks = list(tasks)
        if self.ray is not None:
            return _run_ray(fn, tasks, self.ray, on_done)
        done: dict = {}
        try:
            if self.jobs == 1 or len(tasks) <= 1:
                for index, task in enumerate(tasks):
                    done[index] = fn(task)
                    _tick(on_done, len(done), len(tasks))
            else:
                self._collect(fn, tasks, done, on_done, weights)
        except KeyboardInterrupt:
            raise Interrupted(done) from None
        return [done[index] for index in range(len(tasks))]

    def _collect(self, fn, tasks, done: dict, on_done, weights=None) -> None:
        from concurrent.futures import as_completed

        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            ctx = multiprocessing.get_context("spawn" if os.name == "nt" else "fork")
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=ctx, initializer=ignore_ctrl_c)
        try:
            order = (range(len(tasks)) if weights is None else
                     sorted(range(len(tasks)), key=lambda index: -weights[index]))  # stable: ties in task order
            futures = {self._pool.submit(fn, tasks[index]): index for index in order}
            for future in as_completed(futures):
                done[futures[future]] = future.result()
                _tick(on_done, len(done), len(tasks))
        except BaseException:
            self.close(cancel=True)
            raise


def ignore_ctrl_c() -> None:
    """A worker process ignores SIGINT: a terminal's Ctrl-C reaches every process of its group, and the
    parent alone stops the run (it terminates the workers, `TaskPool.close(cancel=True)`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def terminate_workers(pool) -> None:
    """Terminate a ProcessPoolExecutor's worker processes (Python 3.14's `terminate_workers`; before
    it, each of the executor's processes: it has no public handle on them)."""
    if hasattr(pool, "terminate_workers"):
        pool.terminate_workers()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        if proc.is_alive():
            proc.terminate()
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.join(timeout=1.0)


def _tick(on_done, done: int, total: int) -> None:
    if on_done is not None:
        on_done(done, total)


def _call(fn, task):
    """`fn(task)`: the one function Ray runs (`ray.remote` takes functions, not partials)."""
    return fn(task)


def _run_ray(fn, tasks, address: str, on_done) -> list:
    try:
        import ray as ray_module
    except ImportError:
        raise InvalidValueError("ray needs the ray extra: pip install 'llm-cost[ray]'", params=("ray",)) from None
    if not str(address).strip():
        raise InvalidValueError("ray must be a cluster address (host:port, ray://host:port), auto or local, got ''",
                                params=("ray",))
    if not ray_module.is_initialized():
        _check_reachable(str(address).strip())
        try:
            ray_module.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        except ConnectionError as error:  # "auto" with no cluster running: Ray says so at once
            raise InvalidValueError(f"ray: no Ray cluster found at {address!r} ({str(error).splitlines()[0]})",
                                    params=("ray",)) from None
    remote = ray_module.remote(_call)  # a function Ray can wrap, whatever `fn` is (a partial too)
    refs = [remote.remote(fn, task) for task in tasks]
    task_index = {ref: index for index, ref in enumerate(refs)}
    done: dict = {}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray_module.wait(pending, num_returns=1)
            for ref in ready:
                done[task_index[ref]] = ray_module.get(ref)
            _tick(on_done, len(done), len(tasks))
    except KeyboardInterrupt:
        for ref in pending:
            ray_module.cancel(ref)
        raise Interrupted(done) from None
    return [done[index] for index in range(len(tasks))]


RAY_CONNECT_TIMEOUT_S = 5.0  # a cluster's head answers at once; Ray's own client retries for minutes


def _check_reachable(address: str) -> None:
    """A `host:port` (or `ray://host:port`) address answers a TCP connection within
    RAY_CONNECT_TIMEOUT_S, before Ray's client is started: unanswered, `ray.init` retries for
    minutes with a log line every 5 s. "auto" and "local" are Ray's to resolve."""
    import socket

    if address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidValueError(f"ray must be a cluster address (host:port, ray://host:port), auto or local, "
                                f"got {address!r}", params=("ray",))
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_TIMEOUT_S).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InvalidValueError(f"ray: no Ray cluster answers at {address} ({reason}); start one with "
                                f"`ray start --head` or give its address", params=("ray",)) from None
