"""One GPU's share of a deployment: the bytes it holds and reads, the FLOPs it does, what it sends.

Tensor parallel (tp): every GEMM's weights and FLOPs, the attention heads and their pairs split
over tp GPUs (the embedding and LM head vocabulary-parallel, as vLLM and Megatron split them).
K/V heads split too while there are at least tp of them; with fewer each GPU keeps
max(1, kv_heads / tp) of them (`kv_share`), and their K/V projections are replicated with them;
an MLA latent (and its down-projections) is replicated on every GPU. Two all-reduces per layer
(after attention, after the MLP or MoE) of rows x hidden x 2 bytes (BF16 activations, also under
FP8 weights).

Pipeline parallel (pp): the layers in pp balanced stages (each GPU 1/pp of the weights and K/V);
a pass crosses the stages one after another, with pp - 1 hand-offs of rows x hidden x 2 bytes.

Expert parallel (ep): a MoE layer's routed experts spread over the expert group of max(tp, ep)
GPUs, whole experts when ep >= tp; ep > tp spans ep / tp replicas whose attention runs data
parallel and whose rows meet in the experts (the replicas run the same batch). Each MoE layer
adds a dispatch and a combine all-to-all over ep GPUs of rows / tp x top-k x hidden x 2 bytes.
Uniform routing, no load imbalance.

The collectives' times are `llm_cost.parallel.comm`'s; they add to the roofline unless
`Deployment.overlap_comm`. At tp = pp = ep = 1 `deployed_cost` returns the one-GPU `PassCost`
unchanged.
"""

from __future__ import annotations

import dataclasses

from llm_cost.counts import weight_bytes
from llm_cost.errors import InvalidValueError
from llm_cost.parallel.comm import all_reduce_s, all_to_all_s, send_s
from llm_cost.roofline import PassCost
from llm_cost.specs import Accelerator, ModelSpec, WeightFormat
from llm_cost.specs.deployment import Deployment

ACTIVATION_BYTES = 2  # BF16 activations on the wire (all-reduce, all-to-all, stage hand-off)


def check_deployment(model: ModelSpec, gpu: Accelerator, deployment: Deployment) -> None:
    """Raise InvalidValueError (naming the option) unless `model` can be split as `deployment` says.

    tp divides the query heads, and the K/V heads or is a multiple of them; pp at most the layers;
    ep only for a MoE, dividing its routed experts, with ep and tp one a multiple of the other and
    ep / tp dividing the replicas; an interconnect on the datasheet when anything is split.
    """
    tp, pp, ep = deployment.tp, deployment.pp, deployment.ep
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
        if ep % tp and tp % ep:
            raise InvalidValueError(f"ep must divide tp = {tp} or be a multiple of it, got {ep}", params=("ep",))
        if ep > tp and deployment.replicas % (ep // tp):
            raise InvalidValueError(f"ep = {ep} spans {ep // tp} replicas of tp = {tp}: --gpus must hold a multiple "
                                    f"of them (replicas {deployment.replicas})", params=("ep", "gpus"))
    split = [name for name, degree in (("tp", tp), ("pp", pp), ("ep", ep)) if degree > 1]
    if split and not gpu.interconnect_bytes_per_s:
        raise InvalidValueError(f"{split[0]} = {deployment.__dict__[split[0]]} needs the interconnect: "
                                f"{gpu.name}'s datasheet has no interconnect_bytes_per_s", params=(split[0],))


def kv_share(model: ModelSpec, tp: int) -> float:
    """Fraction of the model's K/V one GPU of a tp group holds: max(1/tp, 1/kv_heads); 1 for MLA
    (the latent is replicated)."""
    if model.mla is not None:
        return 1.0
    return max(1.0 / tp, 1.0 / model.num_kv_heads)


def replicated_params_per_layer(model: ModelSpec, tp: int) -> float:
    """Parameters per layer one GPU holds beyond its 1/tp share: K/V projections kept with replicated
    K/V heads, or MLA's down-projections (q_a, kv_a and their norms), replicated on every GPU."""
    if tp == 1:
        return 0.0
    d, mla = model.hidden_size, model.mla
    if mla is None:
        kv_proj = 2 * d * model.kv_dim + (2 * model.kv_dim if model.qkv_bias else 0)
        return kv_proj * (kv_share(model, tp) - 1.0 / tp)
    down = d * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank
    if mla.q_lora_rank:
        down += d * mla.q_lora_rank + mla.q_lora_rank
    return down * (1.0 - 1.0 / tp)


def weight_bytes_per_gpu(model: ModelSpec, weights: WeightFormat, deployment: Deployment) -> float:
    """Weight bytes one GPU holds: 1/(tp pp) of the shared weights, 1/(max(tp, ep) pp) of the routed
    experts, plus the replicated attention parameters of its layers."""
    wb = weight_bytes(model, weights)
    tp, pp = deployment.tp, deployment.pp
    experts = wb.num_moe_layers * wb.num_experts * wb.expert
    replicated = model.num_layers * replicated_params_per_layer(model, tp) * wb.effective_bits / 8
    return ((wb.total - experts) / tp + experts / deployment.expert_group + replicated) / pp


def comm_terms(model: ModelSpec, gpu: Accelerator, deployment: Deployment) -> tuple[float, float]:
    """(fixed seconds, seconds per row) of one pass's collectives, all stages: 2 all-reduces per
    layer over tp, 2 all-to-alls per MoE layer over ep, pp - 1 stage hand-offs."""
    tp, pp, ep = deployment.tp, deployment.pp, deployment.ep
    row = model.hidden_size * ACTIVATION_BYTES  # one row's activations
    moe_layers = model.num_layers - model.moe.first_dense_layers if model.moe else 0
    k = model.moe.experts_per_token if model.moe else 0

    def per_pass(rows):
        s = 2 * model.num_layers * all_reduce_s(rows * row, tp, gpu)
        if ep > 1:
            s += 2 * moe_layers * all_to_all_s(rows / tp * k * row, ep, gpu)
        if pp > 1:
            s += (pp - 1) * send_s(rows * row, gpu)
        return s

    fixed = per_pass(0.0)
    return fixed, per_pass(1.0) - fixed


def deployed_cost(cost: PassCost, model: ModelSpec, gpu: Accelerator, weights: WeightFormat,
                  deployment: Deployment) -> PassCost:
    """One GPU's `PassCost` (of one stage) on `deployment`, from the one-GPU `cost` of the same model,
    accelerator, profile and format (a subclass stays itself: `serving.IterationCost`).

        W / (tp pp) + replicated,  kv x kv_share / pp,  row and pair FLOPs / (tp pp),
        expert bytes / (max(tp, ep) pp) with rows x max(tp, ep) / tp,  stages pp,  comm_terms

    Unchanged (the same object) at tp = pp = ep = 1. Checks the deployment (`check_deployment`).
    """
    check_deployment(model, gpu, deployment)
    if deployment.is_single:
        return cost
    tp, pp, group = deployment.tp, deployment.pp, deployment.expert_group
    wb = weight_bytes(model, weights)
    replicated = model.num_layers * replicated_params_per_layer(model, tp) * wb.effective_bits / 8
    comm_fixed, comm_row = comm_terms(model, gpu, deployment)
    return dataclasses.replace(
        cost,
        weight_bytes=(cost.weight_bytes / tp + replicated) / pp,
        kv_token_bytes=cost.kv_token_bytes * kv_share(model, tp) / pp,
        row_flops=cost.row_flops / (tp * pp),
        pair_flops=cost.pair_flops / (tp * pp),
        expert_bytes=cost.expert_bytes / (group * pp),
        expert_rows_scale=group / tp,
        stages=pp, comm_fixed_s=comm_fixed, comm_row_s=comm_row, overlap_comm=deployment.overlap_comm)

