"""Rows of `--breakdown` (`roofline`, `request`): one per operator of a pass, and the pass's total.

Each row: pass, operator, bytes, flops, memory_time_s, compute_time_s, time_s (its part of the pass's
total: `parallel.breakdown`), share_of_pass (time_s / total), bound, source. The last row of each pass
is its total: the times summed, and the bytes and FLOPs of the GPU's own operators (a collective's
bytes are its message, not memory traffic).
"""

from __future__ import annotations

from llm_cost.report.render import Column, fixed

BREAKDOWN_COLUMNS = [
    Column("pass", "pass"),
    Column("operator", "operator"),
    Column("bytes", "bytes (GB)", fixed(4, 1e9)),
    Column("flops", "GFLOP", fixed(2, 1e9)),
    Column("memory_time_s", "memory (ms)", fixed(4, 1e-3)),
    Column("compute_time_s", "compute (ms)", fixed(4, 1e-3)),
    Column("time_s", "time (ms)", fixed(4, 1e-3)),
    Column("share_of_pass", "share", fixed(3)),
    Column("bound", "bound"),
    Column("source", "source"),
]

COMPOSITION = ("time = its share of the bounding side (x stages) for each operator, each collective's exposed "
               "part, the fixed time; they sum to the pass: T = stages x max(sum memory, sum compute) + "
               "collectives + hand-offs + fixed")


def breakdown_rows(label: str, ops, total_s: float) -> list[dict]:
    """The rows of one pass named `label` from its `OperatorTime`s (or sums of them: `summed`), then a
    total row (bytes, FLOPs, memory and compute summed; time_s = `total_s`, the step's step_time_s)."""
    rows = [{"pass": label, "operator": op.operator, "bytes": op.bytes, "flops": op.flops,
             "memory_time_s": op.memory_time_s, "compute_time_s": op.compute_time_s, "time_s": op.time_s,
             "share_of_pass": op.time_s / total_s if total_s else 0.0, "bound": op.bound, "source": op.source}
            for op in ops]
    moved = [op for op in ops if op.bound != "communication"]  # bytes and FLOPs of the GPU's own work
    rows.append({"pass": label, "operator": "total", "bytes": sum(op.bytes for op in moved),
                 "flops": sum(op.flops for op in moved), "memory_time_s": sum(op.memory_time_s for op in ops),
                 "compute_time_s": sum(op.compute_time_s for op in ops), "time_s": total_s,
                 "share_of_pass": 1.0, "bound": "-", "source": "-"})
    return rows


def summed(passes) -> list:
    """Operators of several passes (a chunked prefill) added name by name, in first-seen order; an
    operator's bound is recomputed from its summed sides."""
    from dataclasses import replace

    out: dict = {}
    for ops in passes:
        for op in ops:
            if op.operator not in out:
                out[op.operator] = op
                continue
            kept = out[op.operator]
            out[op.operator] = replace(kept, bytes=kept.bytes + op.bytes, flops=kept.flops + op.flops,
                                       memory_time_s=kept.memory_time_s + op.memory_time_s,
                                       compute_time_s=kept.compute_time_s + op.compute_time_s,
                                       time_s=kept.time_s + op.time_s)
    result = []
    for op in out.values():
        if op.bound in ("memory", "compute"):
            op = replace(op, bound="memory" if op.memory_time_s >= op.compute_time_s else "compute")
        result.append(op)
    return result


def roofline_breakdown_rows(model, gpu, profile, *, rows, batch: int, context: int, weights,
                            deployment) -> tuple[list[dict], str]:
    """`--breakdown` of `roofline`: the operators of each pass over `rows` rows (a list), and a caption.

    `m` a pass's token rows, `b` its batch (as `roofline.check_pass` returns them)."""
    from llm_cost.parallel import deployed_pass_cost
    from llm_cost.parallel.breakdown import pass_breakdown
    from llm_cost.roofline import check_pass

    deployment = deployment.following(profile)
    cost = deployed_pass_cost(model, gpu, profile, weights, deployment)
    out = []
    for m in rows:
        m, b, ctx = check_pass(m, batch, context)
        total = cost.step(m, b, ctx, count_kv=profile.count_kv).step_time_s
        ops = pass_breakdown(cost, model, gpu, profile, weights, deployment, rows=m, batch=b, context=ctx)
        out += [{"rows": m, "batch": b, "context": ctx, **row}
                for row in breakdown_rows(f"{m:g} row{'' if m == 1 else 's'}", ops, total)]
    return out, COMPOSITION


def request_breakdown_rows(model, gpu, profile, *, batch: int, isl: int, osl: int, weights, deployment,
                           prefill_chunk=None) -> tuple[list[dict], str]:
    """`--breakdown` of `request`: the prefill (its chunks summed, and the profile's first-token overhead:
    the TTFT) and the first and last decode steps (tpot_first_s, tpot_last_s), as `requests.phases` times them."""
    from llm_cost.errors import check_number
    from llm_cost.parallel import deployed_pass_cost
    from llm_cost.parallel.breakdown import pass_breakdown

    for name, value, low in (("batch", batch, 1), ("isl", isl, 1), ("osl", osl, 1)):
        check_number(name, value, low=low, integer=True)
    if prefill_chunk is not None:
        check_number("prefill_chunk", prefill_chunk, low=1, integer=True)
    deployment = deployment.following(profile)
    cost = deployed_pass_cost(model, gpu, profile, weights, deployment)
    kv = profile.count_kv

    def one(rows, context):
        ops = pass_breakdown(cost, model, gpu, profile, weights, deployment, rows=rows, batch=batch, context=context)
        return ops, cost.step(rows, batch, context, count_kv=kv).step_time_s

    chunk, done, passes, ttft = prefill_chunk or isl, 0, [], 0.0
    while done < isl:
        tokens = min(chunk, isl - done)
        ops, step_s = one(batch * tokens, done)
        passes.append(ops)
        ttft, done = ttft + step_s, done + tokens
    ops = summed(passes)
    if profile.ttft_overhead_s:  # the engine's time before the first token beyond the prefill: in TTFT
        from llm_cost.parallel.breakdown import OperatorTime

        ops.append(OperatorTime("first-token overhead (engine)", 0.0, 0.0, 0.0, 0.0, profile.ttft_overhead_s,
                                "fixed", "fitted"))
        ttft += profile.ttft_overhead_s
    out = breakdown_rows(f"prefill ({len(passes)} pass{'es' if len(passes) > 1 else ''})", ops, ttft)
    if osl > 1:
        for label, context in (("first decode", isl), ("last decode", isl + osl - 2)):
            ops, step_s = one(batch, context)
            out += breakdown_rows(f"{label}, ctx {context}", ops, step_s)  # one line at 80 columns
    return out, COMPOSITION
