"""Deployment invariants: what splitting a model over GPUs promises, for any (model, gpu) pair.

- one GPU as a `Deployment()` is `step_time` bit for bit;
- more GPUs (a larger tp, then a larger pp) never raise one GPU's weight, K/V or needed bytes for
  the same batch (one static batch in flight: pp splits its layers, and their K/V, over the stages);
- collectives cost nothing at tp = 1 and, at fixed bytes, more the larger tp.

The tp degrees tried are the model's valid ones (dividing its heads; its K/V heads or a multiple of
them); a datasheet without an interconnect is checked at tp = 1 only.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from llm_cost.checks.invariant import Invariant
from llm_cost.checks.strategies import batches, contexts, kv_widths, profiles, rows_per_sequence
from llm_cost.roofline import step_time
from llm_cost.specs.deployment import Deployment

DEGREES = (1, 2, 4, 8, 16)
KV_DTYPE_OF_WIDTH = {0.5: "int4", 1.0: "fp8", 2.0: "bf16", 4.0: None}


def valid_tp(model, gpu) -> list[int]:
    """The tp degrees in DEGREES this model can be split over on this datasheet (1 without an interconnect)."""
    if not gpu.interconnect_bytes_per_s:
        return [1]
    kv = model.num_kv_heads
    return [tp for tp in DEGREES
            if model.num_heads % tp == 0 and (model.mla is not None or kv % tp == 0 or tp % kv == 0)]


def _tp1_exact(model, gpu):
    from llm_cost.parallel import deployed_step_time

    @given(profile=profiles, batch=batches, per_sequence=rows_per_sequence, ctx=contexts)
    def prop(profile, batch, per_sequence, ctx):
        one = step_time(model, gpu, profile, rows=batch * per_sequence, batch=batch, context=ctx)
        split = deployed_step_time(model, gpu, profile, Deployment(), rows=batch * per_sequence, batch=batch,
                                   context=ctx)
        assert split.step_time_s == one.step_time_s and split.bound == one.bound, (split.step_time_s, one.step_time_s)
        assert split.comm_time_s == 0.0
    return prop


def _per_gpu_bytes_fall(model, gpu):
    from llm_cost.parallel import step_fit

    @given(batch=batches, ctx=contexts,
           width=kv_widths.filter(lambda kv_width: KV_DTYPE_OF_WIDTH[kv_width] is not None),
           pp=st.integers(min_value=1, max_value=min(4, model.num_layers)))
    def prop(batch, ctx, width, pp):
        kv = KV_DTYPE_OF_WIDTH[width]
        last = None
        splits = [Deployment(tp=tp, kv_dtype=kv) for tp in valid_tp(model, gpu)]
        if gpu.interconnect_bytes_per_s:
            splits.append(Deployment(tp=splits[-1].tp, pp=pp, kv_dtype=kv))
        for split in splits:  # the same batch on every split (one static batch in flight per replica)
            fit = step_fit(model, gpu, split, rows=batch, batch=batch, context=ctx)
            now = (fit.weight_bytes, fit.kv_bytes, fit.needed_bytes)
            if last is not None:
                assert all(after <= before * (1 + 1e-12) for before, after in zip(last, now)), (
                    f"{split}: {now} > {last}")
            last = now
    return prop


def _comm_grows_with_tp(model, gpu):
    from llm_cost.parallel import deployed_step_time

    @given(batch=batches, per_sequence=rows_per_sequence, ctx=contexts)
    def prop(batch, per_sequence, ctx):
        comm = [deployed_step_time(model, gpu, "article", Deployment(tp=tp), rows=batch * per_sequence, batch=batch,
                                   context=ctx).comm_time_s for tp in valid_tp(model, gpu)]
        assert comm[0] == 0.0, f"comm {comm[0]} s at tp = 1"
        assert all(later > earlier for earlier, later in zip(comm, comm[1:])), (
            f"comm over tp {valid_tp(model, gpu)}: {comm}")
    return prop


DEPLOYMENTS = [
    Invariant("tp1_exact", "one GPU as a Deployment() is step_time bit for bit, no communication", _tp1_exact),
    Invariant("per_gpu_bytes_fall", "more GPUs (tp, then pp) never raise one GPU's weight, KV or needed bytes "
              "for the same sequences",
              _per_gpu_bytes_fall),
    Invariant("comm_grows_with_tp", "collectives take 0 s at tp = 1 and longer as tp grows", _comm_grows_with_tp),
]
