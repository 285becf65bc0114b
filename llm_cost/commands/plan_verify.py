"""`plan --verify N`'s table: the served ranking's columns beside the frontier's, and the caption's part
on how the engine served (the library's `planner.plan_served.ServedCheck`). The check itself (candidates
served, ranked) is the library's (`planner.plan_run.run_plan`); only `plan` calls this."""

from __future__ import annotations

from llm_cost.report.render import Column, fixed

VERIFY_COLUMNS = [
    Column("analytic_rank", "static rank", fixed(0)),
    Column("rank_change", "rank change", str),
    Column("served_ttft_s", "served TTFT ms", fixed(0, 1e-3)),
    Column("served_tpot_s", "served TPOT ms", fixed(2, 1e-3)),
    Column("goodput_req_per_s_per_gpu", "goodput req/s per GPU", fixed(3)),
    Column("meets_served_slo", "served SLO", lambda met: "yes" if met else "NO"),
]


def verified_table(out, columns: list, caption: str) -> tuple[list, str]:
    """(columns, caption) of a served `PlanOutcome`'s rows: the served rank first, the served fields
    after the frontier's `columns` (a "served as" column when a row was served simplified), and the
    caption told how the candidates were served (and after a Ctrl-C how many were)."""
    check, rows = out.served, out.rows
    caption += _caption(check.recipe, len(rows), check.slo_stat, check.splits) + served_as(check)
    if check.stopped:
        caption += f"; interrupted: {len(rows)} of {check.stopped[1]} candidates served"
    cols = [Column("served_rank", "rank", fixed(0))] + columns + VERIFY_COLUMNS
    if any(row.get("serve_note") for row in rows):
        cols.append(Column("serve_note", "served as", str))
    return cols, caption


def served_as(check) -> str:
    """The caption's part saying how the engine served (from the first candidate's `ServeConfig`)."""
    settings, config = check.settings, check.config
    if config is None:
        return ""
    out = (f"; served with {settings.engine}'s defaults on {check.gpu.name}" if settings.engine is not None
           else "; served")
    out += (f": K/V paged in blocks of {config.block_size}" if config.reservation == "paged"
            else ": K/V contiguous per sequence (its max length reserved)")
    out += f", prompts in chunks of {config.prefill_chunk} tokens" if config.prefill_chunk else ", whole prompts"
    out += ", max sequences the row's batch (as its launch command sets it)"
    if settings.prefix_caching:
        out += ", prefix caching"
    if settings.kv_offload_bytes:
        out += f", a host K/V tier of {settings.kv_offload_bytes / 1e9:g} GB"
    return out


def _caption(wl, served: int, stat: str, split: bool) -> str:
    """The caption's part on how the candidates were served: one stream for all, the ranking."""
    load = (f"rate {wl.rate_req_per_s:g} req/s" if wl.rate_req_per_s is not None else
            f"{wl.concurrency} clients" if wl.concurrency is not None else "the trace's rate")
    stream = f"{wl.requests} requests" if wl.trace is None else f"the trace's {len(wl.trace)} requests"
    prefixed = any(getattr(wl.prefixes, field, None) is not None
                   for field in ("shared_prefix", "prefix_groups", "sessions"))
    stream += (" (the trace's prompt and output lengths" if wl.trace is not None else
               f" (prompt {wl.prompt} tokens, output {wl.output} tokens") + (
               ", prompts grown by their prefixes)" if prefixed else ")")
    text = (f"; verified: the {served} best served by the engine, "
            f"every one the same stream of {stream} at {load} (seed {wl.seed}), its replicas taking them "
            f"round-robin (one replica served); ranked by goodput per GPU (requests/s within TTFT and TPOT) with "
            f"the {stat} of TTFT and TPOT within the target first; served TTFT/TPOT are {stat}")
    if split:
        text += ("; disaggregated splits served as P prefill and D decode replicas behind least-loaded routers "
                 "(the whole stream, the K/V over the GPU's link), static rank after the frontier's")
    return text
