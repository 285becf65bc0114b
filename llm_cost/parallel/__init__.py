"""Deployments: tensor, pipeline and expert parallelism, their collectives, and whether a split fits.

    one GPU's pass = stages x max(bytes_gpu / (BW eta_bw), flops_gpu / (F_prec eta_f)) + comm + t_fixed

`shard` says what one GPU holds, reads and computes (and builds its `PassCost`), `comm` times the
collectives over the datasheet's interconnect, `fit` checks memory and context, `step` puts them
together for one pass. At tp = pp = ep = 1 everything is the one-GPU roofline exactly.
"""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".comm", "all_reduce_s", "all_to_all_s", "send_s"),
    **names_from(".shard", "ACTIVATION_BYTES", "check_deployment", "comm_terms", "deployed_cost", "deployment_kv_share", "kv_share",
                 "replicated_params_per_layer", "weight_bytes_per_gpu"),
    **names_from(".fit", "Fit", "deployment_fit", "largest_batch", "workspace_bytes"),
    **names_from(".step", "deployed_pass_cost", "deployed_step_time", "step_fit"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
