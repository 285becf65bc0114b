"""Speculative decoding: closed forms, the roofline speedup at batch B, trees, MTP, exact sampling.

`inputs` (alpha, gamma and cost ratios validated), `closed_forms` (Leviathan et al.'s Eq. 1,
Theorems 3.8 and 3.11), `gamma_choice` (the optimal gamma, the paper's table), `tau` (alpha from
a mean accepted length), `batched` (verification on the roofline at any batch, the best gamma
there), `turning` (where verification stops being free, the break-even batch), `moe` (a MoE
target beside its dense twin), `trees` (token trees), `mtp` (DeepSeek-V3's MTP module as the
draft), `sampling` (exact speculative sampling and its wrong variants), `rounds` (whole rounds
over streams of acceptances).
"""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".closed_forms", "expected_tokens", "speedup", "gamma_one_speedup", "ops_factor",
                 "weight_reads_per_token", "compute_bound_speedup", "implied_c"),
    **names_from(".inputs", "check_alpha", "check_gamma", "check_cost", "TIE_RTOL"),
    **names_from(".gamma_choice", "optimal_gamma", "OptimalGamma", "leviathan", "LeviathanForms"),
    **names_from(".batched", "roofline_speedup", "RooflineSpeedup", "best_gamma", "BestGamma"),
    **names_from(".fit", "verification_fit", "draft_deployment_for"),
    **names_from(".turning", "turning_batch", "TurningBatch", "costly_verification_batch", "break_even_batch",
                 "VERIFY_COSTLY"),
    **names_from(".moe", "dense_twin", "moe_vs_dense", "MoeVsDense"),
    **names_from(".trees", "TopKHits", "tree_nodes", "tree_tau", "tree_speedup", "TreeSpeedup",
                 "WEAK_DRAFT", "STRONG_DRAFT"),
    **names_from(".mtp", "mtp_params", "MtpParams", "mtp_step_time", "mtp_speedup", "MtpSpeedup"),
    **names_from(".sampling", "speculative_step", "SpeculativeStep", "output_distribution",
                 "total_variation", "sample_outputs"),
    **names_from(".tau", "alpha_from_tau"),
    **names_from(".rounds", "simulate_rounds", "RoundStats", "IndependentAcceptance", "BurstyAcceptance"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
