"""The cost table's view: its rows turned around, one column per model, and the notes under it.

`table_view` writes one line per quantity (cells as text, the units in the labels); `table_notes`
says what the table assumes (the article preset, the MTP draft, the deployment). The rows are
`cost_table.table_rows`'.
"""

from __future__ import annotations

from typing import Callable, Sequence

from llm_cost.errors import InvalidValueError
from llm_cost.report.cost_table import DEFAULT_CONTEXTS, check_contexts
from llm_cost.speculative.mtp import MTP_ALPHA_REPORTED, MTP_TPS_REPORTED


# ---- the view: one column per model ----------------------------------------------------------

def _num(key: str, digits: int, scale: float = 1.0) -> Callable[[dict], str]:
    def text(row: dict) -> str:
        value = row.get(key)
        return "-" if value is None else f"{value / scale:,.{digits}f}"
    return text


def _span(low: str, high: str, digits: int) -> Callable[[dict], str]:
    def text(row: dict) -> str:
        first, last = row.get(low), row.get(high)
        if first is None:
            return "-"
        return f"{first:.{digits}f}" if f"{first:.{digits}f}" == f"{last:.{digits}f}" else f"{first:.{digits}f}–{last:.{digits}f}"
    return text


def _yes_no(key: str) -> Callable[[dict], str]:
    return lambda row: "yes" if row[key] else "no"


def _batch(weights: str, context: int) -> Callable[[dict], str]:
    """The largest batch at `context` tokens; a dash where the weights do not fit; marked past the model's limit."""
    def cell(row: dict) -> str:
        if not row[f"fits_{weights}"]:
            return "-"
        return f"{row[f'max_batch_{weights}_at_{context}']:,}" + (PAST_MARK if _past(row, context) else "")
    return cell


def _past(row: dict, context: int) -> bool:
    return bool(row.get("context_limit")) and context > row["context_limit"]


def _marked_past(row: dict) -> bool:
    """Whether some largest-batch cell of `row` carries `PAST_MARK` (its contexts: the row's keys)."""
    key = "kv_bytes_per_sequence_at_"
    contexts = [int(name[len(key):]) for name in row if name.startswith(key)]
    return (row["fits_bf16"] or row["fits_int4"]) and any(_past(row, context) for context in contexts)


# Marks beside a figure, each explained by a note under the table: a mark keeps the cell one token,
# so at 80 columns no value folds over two lines ("13 (past its" / "8K limit)").
UNFIT_MARK = "†"  # beside a figure whose weights do not fit: it assumes they do
PAST_MARK = "‡"  # beside a largest batch at a context past the model's limit
MTP_MARK = "*"  # beside a speculative speedup drafted by the model's own MTP head
NOT_PRICED = "no fit"  # a price cell where that format's weights do not fit: nothing runs to price


def _assuming_fit(text: Callable[[dict], str], fits_key: str) -> Callable[[dict], str]:
    """A timing or energy cell marked with `UNFIT_MARK` where that format's weights do not fit (the
    article's "70B on one card, assuming it fits"): the figure stays, the mark says it cannot run."""
    def cell(row: dict) -> str:
        value = text(row)
        return value if value == "-" or row[fits_key] else f"{value}{UNFIT_MARK}"
    return cell


def _priced_if_fits(text: Callable[[dict], str], fits_key: str) -> Callable[[dict], str]:
    """A price cell: the figure where that format's weights fit, else `NOT_PRICED` (issue 28.8: a
    deployment that cannot run is marked, not priced)."""
    return lambda row: text(row) if row[fits_key] else NOT_PRICED


def context_label(n: int) -> str:
    """`n` tokens as a label: 4096 -> '4K', 32768 -> '32K', 1000 -> '1000'."""
    return f"{n // 1024}K" if n % 1024 == 0 else f"{n:,}"


def _speculative_cell(row: dict) -> str:
    """The series' speculative row: the generic draft, or for a model with an MTP head (DeepSeek-V3)
    that head at its reported acceptance, verification free (the article §3.2: "DeepSeek-V3 的投机一行按
    其技术报告的 MTP 接受率转述"). The generic draft's figure stays in the JSON keys spec_*."""
    if row["mtp_layers"]:
        return _span("mtp_speedup_verify_free_low", "mtp_speedup_verify_free_high", 2)(row) + MTP_MARK
    return _num("spec_speedup", 2)(row)


def _priced(rows: Sequence[dict], key: str) -> bool:
    """Whether some row has the price `key` for a format (None where nothing fits: `_priced_if_fits`)."""
    return any(row.get(f"{key}_{name}") is not None for row in rows for name in ("bf16", "w4a16"))


def _lines(rows: Sequence[dict], contexts: Sequence[int]) -> list[tuple[str, Callable[[dict], str]]]:
    first = rows[0]
    batch = first["batch"]
    lines = [
        ("parameters, text model (B)", _num("params_text", 2, 1e9)),
        ("parameters, active per token (B)", _num("params_active", 2, 1e9)),
        ("weights, BF16 (GB)", _num("weight_bytes_bf16", 2, 1e9)),
        ("weights, INT4 g128 (GB)", _num("weight_bytes_int4", 2, 1e9)),
        ("INT4 g128, effective bits per weight", _num("bits_int4", 2)),
        (f"KV cache per token, {first['kv_dtype'].upper()} (bytes)", _num("kv_bytes_per_token", 0)),
    ]
    lines += [(f"KV cache at {context_label(context)} context (GB per sequence)",
               _num(f"kv_bytes_per_sequence_at_{context}", 2, 1e9)) for context in contexts]
    lines += [
        ("FLOPs per token, no context (GFLOP)", _num("flops_per_token", 1, 1e9)),
        (f"decode step lower bound, batch {batch}, BF16 (ms)", _assuming_fit(_num("decode_step_s_bf16", 2, 1e-3), "fits_bf16")),
        (f"decode step lower bound, batch {batch}, W4A16 (ms)", _assuming_fit(_num("decode_step_s_w4a16", 2, 1e-3), "fits_int4")),
    ]
    if first.get("decode_joules_per_token_bf16") is not None:
        lines += [(f"decode energy per token, batch {batch}, BF16 (J, est.)",
                   _assuming_fit(_num("decode_joules_per_token_bf16", 3), "fits_bf16")),
                  (f"decode energy per token, batch {batch}, W4A16 (J, est.)",
                   _assuming_fit(_num("decode_joules_per_token_w4a16", 3), "fits_int4"))]
    if _priced(rows, "usd_per_million_tokens_energy"):  # labels of two lines at 80 columns
        lines += [("decode energy cost, BF16 ($ per million output tokens, est.)",
                   _priced_if_fits(_num("usd_per_million_tokens_energy_bf16", 4), "fits_bf16")),
                  ("decode energy cost, W4A16 ($ per million output tokens, est.)",
                   _priced_if_fits(_num("usd_per_million_tokens_energy_w4a16", 4), "fits_int4"))]
    if first["isl"] is not None:
        lines += [(f"time to first token, {first['isl']:,}-token prompt, BF16 (ms)",
                   _assuming_fit(_num("ttft_s_bf16", 1, 1e-3), "fits_bf16")),
                  (f"time to first token, {first['isl']:,}-token prompt, W4A16 (ms)",
                   _assuming_fit(_num("ttft_s_w4a16", 1, 1e-3), "fits_int4"))]
    if first["usd_per_gpu_hour"] is not None:
        lines += [(f"decode cost, batch {batch}, BF16 ($ per million output tokens)",  # the price: a note
                   _priced_if_fits(_num("usd_per_million_output_tokens_bf16", 2), "fits_bf16")),
                  (f"decode cost, batch {batch}, W4A16 ($ per million output tokens)",
                   _priced_if_fits(_num("usd_per_million_output_tokens_w4a16", 2), "fits_int4"))]
    lines += [
        (f"speculative speedup, batch {batch} (×): draft α {first['spec_alpha']:g}, γ {first['spec_gamma']}, c {first['spec_c']:g}",
         _speculative_cell),
    ]
    mtp = next((row for row in rows if row["mtp_layers"]), None)
    if mtp is not None:
        alpha = _span("mtp_alpha_low", "mtp_alpha_high", 2)(mtp)
        lines += [
            (f"MTP draft, γ 1, α {alpha}: tokens per step",
             _span("mtp_expected_tokens_low", "mtp_expected_tokens_high", 2)),
            ("MTP c: module step / model step", _num("mtp_c", 3)),
            ("MTP speedup, verification free: E / (1 + c) (×)",
             _span("mtp_speedup_verify_free_low", "mtp_speedup_verify_free_high", 2)),
            (f"MTP speedup on the roofline, batch {batch} (×)", _span("mtp_speedup_low", "mtp_speedup_high", 2)),
        ]
    usable = f"{first['usable_bytes'] / 1e9:.0f} GB"
    split = first["tp"] * first["pp"] > 1
    per_gpu = " per GPU" if split else ""  # the deployment's tp x pp: its note
    lines += [
        (f"BF16 weights fit in {usable}{per_gpu} ({first['gpu_name']} less {first['reserve_fraction']:.0%})",
         _yes_no("fits_bf16")),
        (f"INT4 g128 weights fit in {usable}{per_gpu}", _yes_no("fits_int4")),
    ]
    replica = ", one replica" if split else ""
    for context in contexts:
        lines += [(f"largest batch at {context_label(context)} context{replica}, BF16 weights", _batch("bf16", context)),
                  (f"largest batch at {context_label(context)} context{replica}, INT4 weights", _batch("int4", context))]
    return lines


def table_view(rows: Sequence[dict], *, contexts: Sequence[int] = DEFAULT_CONTEXTS,
               ) -> tuple[list[dict], list[tuple[str, str]]]:
    """The rows turned around: one row per quantity, one column per model (cells as text).

    `contexts`: the contexts the rows were computed at (`table_rows(..., contexts=...)`).
    Returns the view rows (keys 'quantity', 'm0', 'm1', ...) and the (key, header) of each column.
    """
    if not rows:
        raise InvalidValueError("the cost table needs at least one model")
    contexts = check_contexts(contexts)
    view = []
    for label, text in _lines(rows, contexts):
        cells = {"quantity": label}
        cells.update({f"m{column}": text(row) for column, row in enumerate(rows)})
        view.append(cells)
    return view, [("quantity", "")] + [(f"m{column}", row["model"]) for column, row in enumerate(rows)]


def table_notes(rows: Sequence[dict], split_hint: str = "a deployment's tp or pp splits it") -> list[str]:
    """What the table assumes, and the notes a reader of the MTP and MoE rows needs (one per line);
    `split_hint` says how to split weights that do not fit (a front end names its own options)."""
    first = rows[0]
    notes = [
        f"Theoretical: {first['gpu_name']} at peak bandwidth and FLOP/s (article preset), every weight byte read "
        f"once per step (MoE: the routed experts the step's rows touch), no KV reads, no fixed cost. GB = 1e9 bytes. INT4 g128: 4-bit weights with a "
        f"16-bit scale and zero per group of 128, embeddings included; W4A16 decode reads them.",
        f"Largest batch: sequences of that context whose {first['kv_dtype'].upper()} KV cache (sliding and chunked layers "
        f"holding at most their window) fits in "
        f"{first['memory_bytes'] / 1e9:g} GB ({first['memory_basis']}) x (1 - {first['reserve_fraction']:g}) less the weights "
        f"beside a decode step's activations (a dash where the weights do not fit).",
    ]
    if first["usd_per_gpu_hour"] is not None:
        notes.append(f"Decode cost: ${first['usd_per_gpu_hour']:g} per GPU-hour for each of the deployment's "
                     f"{first['gpus']} GPU{'s' if first['gpus'] > 1 else ''}, over the tokens of one decode step.")
    if any(_priced(rows, key) for key in ("usd_per_million_output_tokens", "usd_per_million_tokens_energy")) and any(
            not (row["fits_bf16"] and row["fits_int4"]) for row in rows):
        notes.append(f"{NOT_PRICED}: that format's weights do not fit, so no deployment runs to price "
                     f"({split_hint}).")
    past = {row["model"]: row["context_limit"] for row in rows if _marked_past(row)}
    if past:
        notes.append(f"{PAST_MARK} Past the model's context limit ("
                     + "; ".join(f"{model}: {context_label(context)} tokens" for model, context in past.items())
                     + "): memory arithmetic only.")
    if any(row["mtp_layers"] for row in rows):
        notes.append(f"{MTP_MARK} A model with an MTP module drafts with its own MTP head (γ 1, the MTP rows), "
                     "not the generic draft.")
    if any(not (row["fits_bf16"] and row["fits_int4"]) for row in rows):
        notes.append(f"{UNFIT_MARK} That format's weights do not fit: the figure is the article's \"assuming it fits\", "
                     f"not a deployment that can run ({split_hint}).")
    if first["tp"] * first["pp"] > 1:
        notes.append(f"Deployment: {first['gpus']} GPUs, tp {first['tp']} x pp {first['pp']}"
                     + (f", ep {first['ep']}" if first["ep"] > 1 else "") + ": each decode step is one GPU's share of the "
                     "weights across the pipeline's stages plus two ring all-reduces per layer (and the MoE layers' "
                     "all-to-alls) over the datasheet's interconnect; the largest batch is one replica's.")
    for row in rows:
        if row["spec_verify_over_base"] > 1.0 + 1e-9 and row["params_active"] < row["params_text"]:  # a MoE
            verdict = "does not pay" if row["spec_speedup"] <= 1.0 else "pays less"
            notes.append(
                f"{row['model']}: verifying {row['spec_gamma'] + 1} rows per sequence at batch {row['batch']} reads "
                f"{row['spec_verify_over_base']:.2f}x the bytes of a decode step (each row routes to its "
                f"own experts), so the generic draft {verdict}.")
    low, high = (f"{acceptance:.0%}" for acceptance in MTP_ALPHA_REPORTED)
    for row in rows:
        if row["mtp_layers"]:
            given = (row["mtp_alpha_low"], row["mtp_alpha_high"])
            alpha = _span("mtp_alpha_low", "mtp_alpha_high", 2)(row)
            source = ("as the report gives it" if given == MTP_ALPHA_REPORTED
                      else f"as given; the report gives {low}-{high}")
            notes.append(
                f"{row['model']} MTP, its own draft (γ 1): acceptance α {alpha} ({source}; DeepSeek-V3 "
                f"Technical Report §5.4.3, which measures {MTP_TPS_REPORTED:g}x TPS). c = one MTP module "
                f"step over one model step on this roofline: one MoE block, the 2d x d projection and the "
                f"shared LM head read again, the embedding a lookup ({row['mtp_params_own'] / 1e9:.1f}B "
                f"parameters of its own, not in the weights above). E / (1 + c) = "
                f"{_span('mtp_speedup_verify_free_low', 'mtp_speedup_verify_free_high', 2)(row)}x against the "
                f"report's {MTP_TPS_REPORTED:g}x; the roofline row is batch {row['batch']} on "
                f"{'one GPU of the deployment' if row['tp'] * row['pp'] > 1 else 'one accelerator'}, "
                f"where verifying 2 rows reads {row['mtp_verify_over_base']:.2f}x the bytes of a step "
                f"(uniform top-k routing).")
    return notes
