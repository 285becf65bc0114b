"""The pipeline is a part of the engine (issue 24.1): `serving.pipeline.Pipeline` holds the iterations
in flight and the loop asks it, so a replacement (a subclass with its own `send`) changes the run."""

from __future__ import annotations

from llm_cost.serving.pipeline import Pipeline


def test_orca_overlaps_stages_and_the_others_wait_for_the_landing():
    orca, serial, micro = (Pipeline(4, mode, 8) for mode in ("orca", "serial", "microbatch"))
    assert orca.send(0.0, 2.0, 1, [0], 0, []) == 0.5 and orca.hold == 32  # 4 batches in flight
    assert serial.send(0.0, 2.0, 1, [0], 0, []) == 2.0 and serial.hold == 8
    assert micro.iteration_stages == 4 and serial.iteration_stages == 1 and orca.iteration_stages == 1
    one = Pipeline(1, "orca", 8)
    assert one.send(0.0, 2.0, 1, [0], 0, []) == 2.0 and one.hold == 8  # one stage: nothing overlaps


def test_landed_takes_the_flights_in_order_of_landing():
    pipe = Pipeline(2, "orca", 4)
    for launch, (now, seconds) in enumerate(((0.0, 3.0), (1.5, 1.0), (2.0, 4.0)), start=1):
        pipe.send(now, seconds, launch, [launch], 0, [])
    assert pipe.next_landing() == 2.5
    assert [flight[1] for flight in pipe.landed(3.0)] == [2, 1]  # landed by t = 3, earliest first
    assert [flight[1] for flight in pipe.landed(3.0)] == [] and pipe.next_landing() == 6.0


def test_the_engine_times_a_pipeline_through_its_part():
    import dataclasses

    import llm_cost as lc
    from llm_cost.serving import engine_loop

    replica = lc.Replica.from_specs(lc.load_model("llama-3-8b"), lc.load_accelerator("h100-sxm"), lc.PRESETS["lecture"],
                                    deployment=lc.Deployment(pp=2))
    workload = lc.poisson_workload(60, 1000.0, seed=3)  # all at once: the pipeline's overlap shows
    config = lc.ServeConfig(max_batch=8, reservation="paged", pipeline="orca")
    base = lc.serve(workload, replica, config, fast=False)

    class Slower(Pipeline):  # a replaced part: the next iteration waits for the landing, as serial does
        def send(self, now, seconds, launch, decoders, gamma, prefills):
            super().send(now, seconds, launch, decoders, gamma, prefills)
            return seconds

    original = engine_loop.Pipeline
    engine_loop.Pipeline = Slower
    try:
        slower = lc.serve(workload, replica, config, fast=False)
    finally:
        engine_loop.Pipeline = original
    assert max(slower.finish_s) > max(base.finish_s)
    assert dataclasses.asdict(lc.serve(workload, replica, config, fast=False)) == dataclasses.asdict(base)


def test_a_replaced_pipeline_is_not_bypassed_by_decode_stretches():
    # decode stretches take iterations without the pipeline's flights: with a replaced part they step aside
    import dataclasses

    import llm_cost as lc
    from llm_cost.serving import decode_stretch, engine_loop

    replica = lc.Replica.from_specs(lc.load_model("llama-3-8b"), lc.load_accelerator("h100-sxm"), lc.PRESETS["lecture"])
    workload = lc.closed_loop_workload(200, 8, seed=1) if hasattr(lc, "closed_loop_workload") else \
        dataclasses.replace(lc.poisson_workload(200, 1000.0, seed=1), concurrency=8)
    config = lc.ServeConfig(max_batch=8, reservation="paged")

    class Slower(Pipeline):  # one stage, each iteration 10% longer to start the next
        def send(self, now, seconds, launch, decoders, gamma, prefills):
            return super().send(now, seconds, launch, decoders, gamma, prefills) * 1.1

    original = engine_loop.Pipeline
    engine_loop.Pipeline = Slower
    try:
        with_stretches = lc.serve(workload, replica, config, fast=False)
        decode_stretch.ENABLED = False
        iterated = lc.serve(workload, replica, config, fast=False)
    finally:
        engine_loop.Pipeline, decode_stretch.ENABLED = original, True
    assert with_stretches.finish_s == iterated.finish_s
    assert max(with_stretches.finish_s) > max(lc.serve(workload, replica, config, fast=False).finish_s)
