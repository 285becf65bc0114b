"""Where one pass's time goes, operator by operator, on one GPU of a deployment (`--breakdown`).

The time model is a roofline over the whole pass, not a sum of per-operator rooflines:

    T = stages x max(sum_ops memory_time_s, sum_ops compute_time_s) + collectives + hand-offs + fixed

so each operator has the bytes it reads and the FLOPs it does (one GPU's share of one stage), its
memory_time_s = bytes / (BW eta_bw) and compute_time_s (its FLOPs at the GEMM ramp and, for routed experts, at
the busiest GPU's load: `PassCost.gemm_rows_parts`), its own bound, and its `time_s`: its share of
the side that bounds the pass, x stages. Then the operators' time_s, each collective's (only the part
not hidden behind the stages under `overlap_comm`), the hand-offs and the fixed time sum to T.

Operators: attention projections (q, k, v, o and their norms and sinks, the replicated K/V or MLA
down-projections under tp), attention (K/V read and written, score and value FLOPs), the MLP of dense
layers, the routed experts (the busiest GPU's under ep), shared experts, router, norms and element-wise
(layer norms, the final norm), embedding and LM head (the input table when the profile reads it);
the all-reduces after attention and after the MLP, the MoE dispatch and combine all-to-alls, the
pipeline hand-offs; the fixed time per pass. The shared weights' bytes are split by parameter count
(exact for one-precision formats; a mixed checkpoint's non-expert bytes are split in proportion).

Under expert parallelism the routed experts' bytes and FLOPs are the busiest GPU's (`expert_load`).

Sources: under a document's preset the roofline's figures are the datasheet's, scaled as the document
says ("datasheet"), and its fixed time is the document's ("stated"); any other profile was fitted
("fitted"); collectives come from the datasheet's link and NCCL's latencies ("datasheet"). Under
`Profile.kernels == "measured"` each operator with a measured table names it (`roofline.kernels`; the
attention row its decode and context attention, or MLA, tables, or "GEMM's (no attention table)").
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_cost.counts import param_counts, weight_bytes
from llm_cost.parallel.comm import all_reduce_s, all_to_all_s
from llm_cost.parallel.shard import ACTIVATION_BYTES, replicated_bytes
from llm_cost.roofline import PassCost
from llm_cost.roofline.kernels import measured_all_reduce, measured_all_to_all
from llm_cost.roofline.expert_load import busiest_gpu_pairs_factor
from llm_cost.roofline.pass_terms import shared_bytes_read
from llm_cost.specs import Accelerator, ModelSpec, Profile, WeightFormat
from llm_cost.specs.deployment import Deployment

DOCUMENT_PRESETS = ("article", "lecture", "lecture-draft")


@dataclass(frozen=True)
class OperatorTime:
    """One operator of a pass on one GPU: bytes, FLOPs, seconds on each side, its share of T (SI)."""

    operator: str
    bytes: float
    flops: float
    memory_time_s: float
    compute_time_s: float
    time_s: float  # what it adds to the pass's total (module doc)
    bound: str  # memory, compute, communication or fixed
    source: str  # datasheet, fitted, or the measured table's source (`roofline.kernels`)


def _param_parts(model: ModelSpec) -> tuple[dict, dict]:
    """(shared weights' parameters by operator, GEMM parameters a row multiplies by operator)."""
    counts = param_counts(model)
    layers, dense, moe = counts.num_layers, counts.num_dense_layers, counts.num_moe_layers
    shared = {"attention projections": layers * counts.attention_block_per_layer,
              "MLP": dense * counts.dense_mlp_per_layer,
              "shared experts": moe * counts.shared_experts_per_layer,
              "router": moe * counts.router_per_layer,
              "norms and element-wise": layers * counts.norms_per_layer + counts.final_norm}
    gemm = dict(shared)
    gemm["routed experts"] = moe * counts.experts_per_token * counts.expert_params
    gemm["embedding and LM head"] = counts.lm_head + (0 if counts.lm_head else counts.embedding)  # a tied table is the head
    return shared, gemm


def pass_breakdown(cost: PassCost, model: ModelSpec, gpu: Accelerator, profile: Profile, weights: WeightFormat,
                   deployment: Deployment, *, rows: float, batch: float, context: float) -> list[OperatorTime]:
    """The operators of one uniform pass (`PassCost.step(rows, batch, context)`) on one GPU of
    `deployment`, `cost` its deployed `PassCost`; their time_s sum to the step's step_time_s (module doc).
    Numbers only."""
    tp, pp = deployment.attention_tp, deployment.pp  # the shared weights' split (1 under dp_attention)
    step = cost.step(rows, batch, context, count_kv=profile.count_kv)
    source = fixed_source = "datasheet" if profile.name in DOCUMENT_PRESETS else "fitted"
    if cost.kernel_source != "datasheet":  # Profile.kernels "measured" on a GPU with a table
        source = cost.kernel_source
    wb = weight_bytes(model, weights)
    shared_params, gemm_params = _param_parts(model)
    always_params = sum(shared_params.values())
    per_gpu = 1.0 / (tp * pp)
    byte_of = {name: wb.always * params / always_params * per_gpu for name, params in shared_params.items()}
    byte_of["attention projections"] += replicated_bytes(model, weights, tp) / pp
    byte_of["embedding and LM head"] = (shared_bytes_read(wb, profile) - wb.always) * per_gpu
    byte_of["routed experts"] = step.weight_bytes_read - cost.weight_bytes
    gemm_active = sum(gemm_params.values())
    dense_rows, expert_rows = cost.gemm_rows_parts(rows, cost.rank_scale(batch))
    ops = []
    for name in ("attention projections", "MLP", "routed experts", "shared experts", "router",
                 "norms and element-wise", "embedding and LM head"):
        row_flops = cost.row_flops * gemm_params[name] / gemm_active if gemm_active else 0.0
        if not (row_flops or byte_of[name]):
            continue
        ran, done = dense_rows, row_flops * rows
        if name == "routed experts":
            ran = expert_rows
            if cost.busiest:  # the busiest GPU's pairs
                done *= busiest_gpu_pairs_factor(cost.num_experts, cost.experts_per_token,
                                                 rows * cost.expert_rows_scale, cost.expert_parallel, cost.busiest_z)
        ops.append((name, byte_of[name], done, row_flops * ran / cost.flops_per_s))
    pair_count = cost.uniform_terms(rows, batch, context)[1] if profile.count_kv else 0.0
    pairs = pair_count * cost.pair_flops
    if step.kv_bytes or pairs:  # measured prefill attention: `PassCost.timed_pairs`
        ops.insert(1, ("attention", step.kv_bytes, pairs,
                       cost.timed_pairs(rows, pair_count) * cost.pair_flops / cost.flops_per_s))
    memory_bound = step.memory_time_s >= step.compute_time_s
    own = {"attention": cost.kv_source, "routed experts": cost.expert_source}  # measured operator tables
    if cost.kernel_source != "datasheet" and not cost.kv_source:  # a GEMM table, no attention one
        own["attention"] = f"{source}: GEMM's (no attention table)"
    out = []
    for name, nbytes, flops, compute_s in ops:
        memory_s = nbytes * (cost.kv_time_factor if name == "attention" else 1.0) / cost.bytes_per_s
        share = memory_s if memory_bound else compute_s
        out.append(OperatorTime(name, nbytes, flops, memory_s, compute_s, share * cost.stages,
                                "memory" if memory_s >= compute_s else "compute", own.get(name) or source))
    out += _collectives(model, gpu, deployment, cost, step, rows)
    if cost.fixed_s:
        out.append(OperatorTime("fixed (launches, scheduling)", 0.0, 0.0, 0.0, 0.0, cost.fixed_s, "fixed",
                                "stated" if fixed_source == "datasheet" else fixed_source))
    return out


def _collectives(model: ModelSpec, gpu: Accelerator, deployment: Deployment, cost: PassCost, step,
                 rows: float) -> list[OperatorTime]:
    """Each collective of the pass (`shard.comm_terms`, one term at a time) and the hand-offs; under
    `overlap_comm` the collectives keep only the part that outlasts the stages, in proportion."""
    tp, ep, reduce_over = deployment.tp, deployment.ep, deployment.attention_tp
    row = model.hidden_size * ACTIVATION_BYTES
    moe_layers = model.num_layers - model.moe.first_dense_layers if model.moe else 0
    top_k = model.moe.experts_per_token if model.moe else 0
    after_mlp = model.num_layers - (moe_layers if ep > 1 else 0)
    measured = cost.kernel_source != "datasheet" and measured_all_reduce(gpu.name, reduce_over) is not None \
        and gpu.domains(reduce_over) == 1
    reduce_s = all_reduce_s(rows * row, reduce_over, gpu, measured=measured)
    parts = [("all-reduce after attention", model.num_layers, rows * row, reduce_s),
             ("all-reduce after MLP", after_mlp, rows * row, reduce_s)]
    a2a_measured = cost.kernel_source != "datasheet" and measured_all_to_all(gpu.name, ep) is not None \
        and gpu.domains(ep) == 1
    if ep > 1:
        a2a = rows / tp * top_k * row
        a2a_s = all_to_all_s(a2a, ep, gpu, measured=a2a_measured)
        parts += [("all-to-all dispatch", moe_layers, a2a, a2a_s), ("all-to-all combine", moe_layers, a2a, a2a_s)]
    parts = [(name, layers * nbytes, layers * float(seconds)) for name, layers, nbytes, seconds in parts if layers and seconds]
    collectives = sum(seconds for _, _, seconds in parts)
    scale = 1.0
    if cost.overlap_comm and collectives:
        body = max(step.memory_time_s, step.compute_time_s) * cost.stages
        scale = max(collectives - body, 0.0) / collectives
    def source(name):
        if measured and name.startswith("all-reduce"):
            return cost.kernel_source
        return f"{cost.kernel_source}: all-to-all" if a2a_measured and name.startswith("all-to-all") else "datasheet"

    out = [OperatorTime(name, nbytes, 0.0, 0.0, 0.0, seconds * scale, "communication", source(name))
           for name, nbytes, seconds in parts]
    handoff = float(step.handoff_s)
    if handoff:
        out.append(OperatorTime("pipeline hand-offs", (deployment.pp - 1) * rows * row, 0.0, 0.0, 0.0, handoff,
                                "communication", "datasheet"))
    return out
