"""The time model: how long one forward pass takes, and where it turns compute-bound.

Symbols, defined once (SI units):

    m       token rows in one pass (batch x new rows per sequence)
    B       sequences in the pass (batch);  ctx  cached tokens per sequence (context)
    W       weight bytes every pass reads;  E(m)  routed experts m rows touch per MoE layer
    kv      K/V bytes of one token, all layers;  N_gemm  active parameters a row multiplies
    BW, F   datasheet bandwidth (bytes/s) and BF16 peak (FLOP/s)
    eta_bw, eta_f, t_fixed   the profile's efficiencies and fixed time per pass

    T(m) = max((W + E(m) expert_bytes + (B ctx + m) kv) / (BW eta_bw),
               (2 N_gemm m + attention pairs x pair_flops) / (F eta_f)) + t_fixed

Windowed layers (sliding, chunked) hold min(ctx, window) tokens and give each new row at most
`window` keys; `pass_terms.windowed_pass` counts B ctx and the pairs with that cap, in all-layer units.

`pass_terms` has the terms T sums (pairs, windows, experts touched, bytes read), `pass_cost` the
coefficients and the one evaluation of T; `step.step_time` validates a uniform
pass and returns a `StepTime` (`timing`); `critical` finds the ridge point, critical rows and batch.
Whether a pass fits in memory is `parallel`'s question, a floor up (`lc.step_time` asks it).
"""

from llm_cost._exports import lazy_exports, names_from

_EXPORTS = {
    **names_from(".step", "step_time", "check_pass"),
    **names_from(".timing", "StepTime"),
    **names_from(".pass_cost", "PassCost", "MAX_BATCH", "MAX_CONTEXT", "MAX_ROWS"),
    # the checked twins of pass_terms' formulas (`terms`: the engines call pass_terms unchecked)
    **names_from(".terms", "causal_pairs", "decode_pairs", "expected_experts_touched", "roofline_total", "uniform_pass",
                 "windowed_pairs", "windowed_pass"),
    **names_from(".critical", "critical_batch", "critical_rows", "first_crossing", "ridge_point"),
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
