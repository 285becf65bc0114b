"""One GPU's share of a deployment: the bytes it holds and reads, the FLOPs it does, what it sends.

Tensor parallel (tp): every GEMM's weights and FLOPs, the attention heads and their pairs split
over tp GPUs (the embedding and LM head vocabulary-parallel, as vLLM and Megatron split them).
K/V heads split too while there are at least tp of them; with fewer each GPU keeps
max(1, kv_heads / tp) of them (`kv_share`), and their K/V projections are replicated with them;
an MLA latent (and its down-projections) is replicated on every GPU. Two all-reduces per layer
(after attention, after the MLP or MoE) of rows x hidden x 2 bytes (BF16 activations, also under
FP8 weights). The figures of the datasheet's link hold within one node (an NVLink or Infinity
Fabric domain); a group that spans nodes is timed at them too, an optimistic bound.

Pipeline parallel (pp): the layers in pp balanced stages (each GPU 1/pp of the weights and K/V);
a pass crosses the stages one after another, with pp - 1 hand-offs of rows x hidden x 2 bytes.

Expert parallel (ep, 1 or a multiple of tp): a MoE layer's routed experts spread whole over ep
GPUs; ep > tp spans ep / tp replicas whose attention runs data parallel and whose rows meet in
the experts (the replicas run the same batch). A MoE layer's output all-reduce is replaced by a
dispatch and a combine all-to-all over ep GPUs of rows / tp x top-k x hidden x 2 bytes each
(SGLang's and vLLM's EP), each (ep - 1) link latencies at least; the attention's all-reduce stays.
Uniform routing; the step waits for the busiest GPU: the experts it reads and the (token, expert)
pairs it computes are the expected maximum over the ep GPUs (`roofline.expert_load`).

Attention data parallel (`Deployment.dp_attention`, ep a multiple of tp): the tp GPUs of a stage are
dp = tp attention ranks, each with every non-expert weight whole (attention, dense MLPs, shared
experts, embedding and LM head) and the K/V of its own sequences: K/V and attention pairs 1/dp of the
batch's on average, the busiest rank's ceil(B / dp) sequences in a uniform pass
(`PassCost.attention_dp`); dense GEMM FLOPs 1/dp of the rows, at full width. No all-reduce at all
(attention_tp 1): the MoE layers' dispatch and combine all-to-alls of rows / dp x top-k x hidden x 2
bytes per rank are the only collectives. The routed experts are as under ep.

Stages that do not divide the layers (80 over pp 3) are as balanced as whole layers allow: the
time crosses all of them, and the memory of the largest, ceil(L / pp) layers, is what must fit
(`stage_share`).

The collectives' times are `llm_cost.parallel.comm`'s; they add to the roofline unless
`Deployment.overlap_comm`; a stage hand-off waits for its stage and always adds. At
tp = pp = ep = 1 `deployed_cost` returns the one-GPU `PassCost` unchanged.
"""

from __future__ import annotations

import dataclasses

from llm_cost.counts import weight_bytes
from llm_cost.counts.weights import tower_weight_bytes
from llm_cost.errors import InvalidValueError
from llm_cost.parallel.comm import all_reduce_s, all_to_all_s, handoffs_across, send_s
from llm_cost.roofline import PassCost
from llm_cost.roofline.pass_terms import DATASHEET
from llm_cost.specs import Accelerator, ModelSpec, WeightFormat
from llm_cost.specs.deployment import Deployment
from llm_cost.catalog.arguments import check_arguments

ACTIVATION_BYTES = 2  # BF16 activations on the wire (all-reduce, all-to-all, stage hand-off)


@check_arguments()
def check_deployment(model: ModelSpec, gpu: Accelerator, deployment: Deployment) -> None:
    """Raise InvalidValueError (naming the option) unless `model` can be split as `deployment` says.

    tp divides the query heads, and the K/V heads or is a multiple of them; pp at most the layers;
    ep only for a MoE, dividing its routed experts, 1 or a multiple of tp, ep / tp dividing the
    replicas; an interconnect on the datasheet when anything is split.
    """
    tp, pp, ep = deployment.attention_tp, deployment.pp, deployment.ep
    if deployment.dp_attention and deployment.tp > 1 and (model.moe is None or ep % deployment.tp):
        raise InvalidValueError(f"dp_attention runs the MoE layers expert parallel over the tp = {deployment.tp} "
                                f"attention ranks: it needs a MoE and ep a multiple of tp, got "
                                f"{'a dense model' if model.moe is None else f'ep = {ep}'}",
                                params=("dp_attention", "ep"))
    if model.num_heads % tp:
        raise InvalidValueError(f"tp must divide the model's {model.num_heads} attention heads, got {tp}",
                                params=("tp",))
    kv = model.num_kv_heads
    if model.mla is None and kv % tp and tp % kv:
        raise InvalidValueError(f"tp must divide the model's {kv} K/V heads or be a multiple of them, got {tp}",
                                params=("tp",))
    if pp > model.num_layers:
        raise InvalidValueError(f"pp must be at most the model's {model.num_layers} layers, got {pp}", params=("pp",))
    if ep > 1:
        if model.moe is None:
            raise InvalidValueError(f"ep must be 1 for a dense model ({model.name} has no experts), got {ep}",
                                    params=("ep",))
        if model.moe.num_experts % ep:
            raise InvalidValueError(f"ep must divide the model's {model.moe.num_experts} routed experts, got {ep}",
                                    params=("ep",))
        group = deployment.tp  # the GPUs of a stage, whatever attention's split
        if ep % group:
            raise InvalidValueError(f"ep must be 1 or a multiple of tp = {group} (whole experts per GPU), got {ep}",
                                    params=("ep", "tp"))
        if ep > group and deployment.replicas % (ep // group):
            raise InvalidValueError(f"ep = {ep} spans {ep // group} replicas of tp = {group}: gpus must hold a "
                                    f"multiple of them (replicas {deployment.replicas})", params=("ep", "tp", "gpus"))
    split = [name for name, degree in (("tp", deployment.tp), ("pp", pp), ("ep", ep)) if degree > 1]
    if split and not gpu.interconnect_bytes_per_s:
        raise InvalidValueError(f"{split[0]} = {deployment.__dict__[split[0]]} needs the interconnect: "
                                f"{gpu.name}'s datasheet has no interconnect_bytes_per_s", params=(split[0],))


@check_arguments()
def kv_share(model: ModelSpec, tp: int) -> float:
    """Fraction of the model's K/V one GPU of a tp group holds: max(1/tp, 1/kv_heads); 1 for MLA
    (the latent is replicated)."""
    if model.mla is not None:
        return 1.0
    return max(1.0 / tp, 1.0 / model.num_kv_heads)


@check_arguments()
def replicated_params_per_layer(model: ModelSpec, tp: int) -> float:
    """Parameters per layer one GPU holds beyond its 1/tp share: K/V projections kept with replicated
    K/V heads, or MLA's down-projections (q_a, kv_a and their norms), replicated on every GPU."""
    if tp == 1:
        return 0.0
    hidden, mla = model.hidden_size, model.mla
    if mla is None:
        kv_proj = 2 * hidden * model.kv_dim + (2 * model.kv_dim if model.qkv_bias else 0)
        return kv_proj * (kv_share(model, tp) - 1.0 / tp)
    down = hidden * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank
    if mla.q_lora_rank:
        down += hidden * mla.q_lora_rank + mla.q_lora_rank
    return down * (1.0 - 1.0 / tp)


def replicated_bytes(model: ModelSpec, weights: WeightFormat, tp: int) -> float:
    """Bytes one GPU holds beyond its 1/tp share, all layers (`replicated_params_per_layer`)."""
    if tp == 1:
        return 0.0
    return model.num_layers * replicated_params_per_layer(model, tp) * weight_bytes(model, weights).effective_bits / 8


@check_arguments()
def deployment_kv_share(model: ModelSpec, deployment: Deployment) -> float:
    """Fraction of one token's K/V one GPU of a stage holds on average: `kv_share` over attention_tp,
    / attention_dp (data-parallel ranks hold their own sequences whole: 1/tp of the tokens)."""
    return kv_share(model, deployment.attention_tp) / deployment.attention_dp


def stage_share(model: ModelSpec, pp: int) -> float:
    """Fraction of the layers the largest of pp stages holds: ceil(L / pp) / L (1/pp when pp divides L)."""
    return -(-model.num_layers // pp) / model.num_layers


@check_arguments()
def weight_bytes_per_gpu(model: ModelSpec, weights: WeightFormat, deployment: Deployment) -> float:
    """Weight bytes one GPU of the largest stage holds: 1/tp of the shared weights (all of them under
    dp_attention: `Deployment.attention_tp`), 1/max(tp, ep) of the routed experts, plus the replicated
    attention parameters, of its ceil(L / pp) / L share; plus 1/tp of a vision tower
    (`counts.weights.tower_weight_bytes`: resident, never read by a decode), whole on the first
    stage, which the largest stage is taken to be (an upper bound when pp does not divide L)."""
    wb = weight_bytes(model, weights)
    experts = wb.num_moe_layers * wb.num_experts * wb.expert
    tp = deployment.attention_tp
    held = (wb.total - experts) / tp + experts / deployment.expert_group
    text = (held + replicated_bytes(model, weights, tp)) * stage_share(model, deployment.pp)
    return text + tower_weight_bytes(model, weights) / tp


def kv_bytes_per_token_per_gpu(model: ModelSpec, kv_bytes_per_token: float, deployment: Deployment) -> float:
    """One token's K/V (all layers: `kv_bytes_per_token`) one GPU of the largest stage holds on average:
    x kv_share(tp) x ceil(L / pp) / L (under dp_attention x 1/tp: `deployment_kv_share`)."""
    return kv_bytes_per_token * deployment_kv_share(model, deployment) * stage_share(model, deployment.pp)


@check_arguments()
def comm_terms(model: ModelSpec, gpu: Accelerator, deployment: Deployment, *,
               measured: bool = False) -> tuple[float, float, float, float]:
    """(fixed seconds, seconds per row) of one pass's collectives, all stages, then the same of its
    pp - 1 stage hand-offs: an all-reduce per layer after attention and per dense layer after the MLP
    over tp (none under dp_attention: attention_tp 1); per MoE layer the MLP's all-reduce (ep 1) or a
    dispatch and a combine all-to-all over ep of each rank's rows / tp
    (`measured`: all-reduces and all-to-alls from the measured NCCL tables where they exist, `comm`)."""
    tp, pp, ep = deployment.tp, deployment.pp, deployment.ep
    reduce_over = deployment.attention_tp
    row = model.hidden_size * ACTIVATION_BYTES  # one row's activations
    moe_layers = model.num_layers - model.moe.first_dense_layers if model.moe else 0
    top_k = model.moe.experts_per_token if model.moe else 0
    all_reduces = 2 * model.num_layers - (moe_layers if ep > 1 else 0)

    def collectives(rows):
        seconds = all_reduces * all_reduce_s(rows * row, reduce_over, gpu, measured=measured)
        if ep > 1:
            seconds += 2 * moe_layers * all_to_all_s(rows / tp * top_k * row, ep, gpu, measured=measured)
        return seconds

    across = handoffs_across(tp, pp, gpu)

    def handoffs(rows):
        if pp == 1:
            return 0.0
        inside = (pp - 1 - across) * send_s(rows * row, gpu)
        return inside + across * send_s(rows * row, gpu, across=True) if across else inside

    fixed, handoff_fixed = collectives(0.0), handoffs(0.0)
    return fixed, collectives(1.0) - fixed, handoff_fixed, handoffs(1.0) - handoff_fixed


@check_arguments()
def deployed_cost(cost: PassCost, model: ModelSpec, gpu: Accelerator, weights: WeightFormat,
                  deployment: Deployment) -> PassCost:
    """One GPU's `PassCost` (of one stage) on `deployment`, from the one-GPU `cost` of the same model,
    accelerator, profile and format (a subclass stays itself: `serving.IterationCost`).

        W / (tp pp) + replicated,  kv x kv_share / pp,  row and pair FLOPs / (tp pp),  GEMM widths / shard,
        expert bytes / (max(tp, ep) pp) with rows x max(tp, ep) / tp,  stages pp,  comm_terms

    (the time's stages are balanced: a pass crosses all of them; `stage_share` is the memory's;
    dp_attention: W / pp, kv x 1/tp / pp, attention_dp tp: the module doc)

    Unchanged (the same object) at tp = pp = ep = 1. Checks the deployment (`check_deployment`).
    """
    check_deployment(model, gpu, deployment)
    if deployment.is_single:
        return cost
    tp, pp, group = deployment.tp, deployment.pp, deployment.expert_group
    attention_tp = deployment.attention_tp
    comm_fixed, comm_row, handoff_fixed, handoff_row = comm_terms(model, gpu, deployment,
                                                                  measured=cost.kernel_source != DATASHEET)
    kv_token_bytes = cost.kv_token_bytes * deployment_kv_share(model, deployment) / pp
    pair_flops = cost.pair_flops / (tp * pp)
    kv_time = cost.kv_time_factor
    if cost.kv_curve:  # a measured decode-attention curve (MLA: heads a GPU over its latent); only then the tables
        from llm_cost.roofline.kernels import kv_time_factor

        kv_time = kv_time_factor(gpu, cost.bytes_per_s, cost.kv_curve, pair_flops, kv_token_bytes)
    return dataclasses.replace(
        cost, kv_time_factor=kv_time,
        weight_bytes=(cost.weight_bytes / attention_tp + replicated_bytes(model, weights, attention_tp)) / pp,
        kv_token_bytes=kv_token_bytes,
        row_flops=cost.row_flops / (tp * pp),
        pair_flops=pair_flops,
        expert_bytes=cost.expert_bytes / (group * pp),
        expert_rows_scale=group / tp, expert_parallel=deployment.ep, attention_dp=deployment.attention_dp,
        dense_width=cost.dense_width / attention_tp, expert_width=cost.expert_width * deployment.ep / group,
        stages=pp, comm_fixed_s=comm_fixed, comm_row_s=comm_row, handoff_fixed_s=handoff_fixed,
        handoff_row_s=handoff_row, overlap_comm=deployment.overlap_comm)

