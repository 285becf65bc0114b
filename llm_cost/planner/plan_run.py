"""`run_plan(request)`: one `PlanRequest` planned (issue 24.4, the library half of `llm-cost plan`).

The search (`plan_search`: the model and accelerators loaded, the grid evaluated, the target), the prices
(`prices_of`), the frontier ranked (`frontier.plan`), then what the request asks of it: the best
prefill/decode splits (`best_split`, `disaggregate`), its best rows served (`plan_served.served_check`,
`verify`), the best row's launch command (`emit.launch_command`, `emit_engine`). What ran comes back as
one `PlanOutcome`; rendering it (columns, captions, notes) is the caller's.

A launch that cannot be given (no row meets the target, none the served SLO) does not stop the plan:
the outcome holds the refusal (`launch_refusal`), raised by the caller after it rendered the rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_cost.errors import InvalidValueError, LlmCostError
from llm_cost.planner.plan_request import MAX_PRICE, PlanRequest, emit_choice


@dataclass(frozen=True)
class Launch:
    """The best row's launch (`emit`): `notes` on what it cannot say (a checkpoint to fill in), and its
    `text`, a Kubernetes manifest (`k8s`) or the command (its last line; any lines before it are files
    it writes first, trtllm's options)."""

    notes: tuple[str, ...]
    text: str
    k8s: bool


@dataclass(frozen=True)
class PlanOutcome:
    """What `run_plan` did.

    Attributes
    ----------
    request
        The `PlanRequest`.
    model, grid, target, refs, prices
        The model's spec, the evaluated `search.Grid`, the `Target`, each model's and accelerator's name
        to the text it was given as (`rows.config_fields`), {accelerator name: $ per GPU-hour}.
    result
        The `frontier.Plan`.
    rows
        The frontier's rows (`rows.plan_rows`, each with `users_in_flight`), best first; served
        (`verify`): the served rows in the served ranking (`plan_served.ranked`).
    split_rows, missing
        `disaggregate` without `verify`: the best splits' `disaggregated_rows` and `best_split`'s count
        of what has none; else None.
    served
        The `plan_served.ServedCheck` of a served check; else None.
    warnings
        Lines to tell the user (a served request longer than the model's context).
    launch, launch_refusal
        The best row's `Launch` (`emit_engine`), or the error that refused it (its `launch_notes`: what
        the launch could not say, when it got that far); else None.

    Examples
    --------
    Llama-3-8B on one H100 under a 20 ms TPOT, two batches searched (lecture preset): both meet it, the
    larger batch first (more tokens per GPU), nothing served or launched:

    >>> out = run_plan(PlanRequest(model="llama-3-8b", gpu="h100-sxm", gpus=1, osl=128, profile="lecture",
    ...                            tpot_s=0.02, batch=(1, 8), weights="bf16", kv_dtype="bf16"))
    >>> out.result.counts["meet"], out.rows[0]["batch"], round(out.rows[0]["tpot_s"] * 1e3, 2)
    (2, 8, 7.03)
    >>> out.served, out.launch, out.interrupted
    (None, None, False)
    """

    request: PlanRequest
    model: object
    grid: object
    target: object
    refs: dict
    prices: dict
    result: object
    rows: list = field(default_factory=list)
    split_rows: list | None = None
    missing: dict | None = None
    served: object = None
    warnings: tuple[str, ...] = ()
    launch: Launch | None = None
    launch_refusal: LlmCostError | None = None

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C stopped the served check before all its candidates finished."""
        return bool(self.served is not None and self.served.stopped)


def plan_search(request: PlanRequest) -> tuple:
    """(model spec, evaluated `search.Grid`, `Target`, refs) of `request`: the names loaded and the
    library's search (`build.plan_grid`); refs maps each model's and accelerator's name to the text given
    for it (a catalog name or a path), and `profile_args` when the request names them.

    >>> spec, grid, target, refs = plan_search(PlanRequest(model="llama-3-8b", gpu=("h100-sxm",), gpus=2,
    ...                                                    osl=128, profile="lecture", tpot_s=0.02))
    >>> spec.name, grid.osl, target.tpot_s, refs
    ('llama-3-8b', 128, 0.02, {'llama-3-8b': 'llama-3-8b', 'H100 SXM': 'h100-sxm'})
    """
    from llm_cost.catalog import as_accelerator, as_model, as_profile
    from llm_cost.planner import Target, plan_grid

    for name in ("model", "gpu"):  # the names, before loading them
        if getattr(request, name) in (None, [], ()):
            raise InvalidValueError(f"{name} is required: the plan needs "
                                    + ("a model to serve" if name == "model" else "at least one accelerator to search"),
                                    params=(name,))
    target = Target(ttft_s=request.ttft_s, tpot_s=request.tpot_s, tokens_per_s_per_user=request.tokens_per_s_per_user)
    spec = as_model(request.model)
    given = list(dict.fromkeys(request.gpu))
    accelerators = [as_accelerator(gpu) for gpu in given]
    draft = request.draft
    draft_spec = as_model(draft) if draft is not None and request.spec_alpha is not None else draft
    refs = {spec.name: _text(request.model, spec),
            **{accelerator.name: _text(gpu, accelerator) for accelerator, gpu in zip(accelerators, given)}}
    if draft is not None and draft_spec is not draft:
        refs[draft_spec.name] = _text(draft, draft_spec)
    grid = plan_grid(spec, accelerators, request.gpus, isl=request.isl, osl=request.osl,
                     profile=as_profile(request.profile), spec_alpha=request.spec_alpha, c=request.c,
                     draft=draft_spec, max_gamma=request.max_gamma, mtp_alpha=request.mtp_alpha, tps=request.tp,
                     pps=request.pp, eps=request.ep, max_tp=request.max_tp, weights=request.weights,
                     kv_dtypes=request.kv_dtype, batches=request.batch, dp_attention=request.dp_attention)
    if request.profile_args is not None:
        refs["profile_args"] = list(request.profile_args)
    return spec, grid, target, refs


def _text(given, spec) -> str:
    """How a row's request_args name a model or accelerator: as given (a name or a path), else its name."""
    return given if isinstance(given, str) else spec.name


def prices_of(texts, space) -> dict:
    """{accelerator name: $ per GPU-hour} of `usd_per_gpu_hour` texts 'GPU=PRICE' (GPU one of the
    search's `space`, by catalog or datasheet name), or one 'PRICE' when the search has one accelerator;
    a price for every accelerator searched, or none.

    >>> from types import SimpleNamespace as Namespace
    >>> space = Namespace(groups=[Namespace(gpu=Namespace(name="H100 SXM"))])
    >>> prices_of(["2.5"], space), prices_of(["h100-sxm=3"], space)
    ({'H100 SXM': 2.5}, {'H100 SXM': 3.0})
    """
    from llm_cost.catalog import load_accelerator
    from llm_cost.errors import check_number

    names = list(dict.fromkeys(group.gpu.name for group in space.groups))
    searched = {group.gpu.name for group in space.groups}
    out, param = {}, ("usd_per_gpu_hour",)
    for text in texts or []:
        key, sep, value = str(text).rpartition("=")
        if not sep:
            if len(names) != 1:
                raise InvalidValueError(f"usd_per_gpu_hour {text}: name the accelerator, GPU=PRICE, when the "
                                        f"search has several", params=param)
            key, value = names[0], text
        try:
            price = float(value)
        except ValueError:
            raise InvalidValueError(f"usd_per_gpu_hour must be GPU=PRICE like h100-sxm=2.5, got {text!r}",
                                    params=param) from None
        try:
            check_number(f"usd_per_gpu_hour {text}: the price", price, low=0, high=MAX_PRICE)
        except InvalidValueError as err:
            raise InvalidValueError(str(err), params=param) from None
        try:
            name = load_accelerator(key).name if key not in searched else key
        except InvalidValueError:
            name = key
        if name not in searched:
            raise InvalidValueError(f"usd_per_gpu_hour {text}: {key} is not an accelerator of the search "
                                    f"({', '.join(sorted(searched))})", params=param)
        out[name] = price
    if out and set(out) != searched:
        missing = sorted(searched - set(out))
        raise InvalidValueError(f"usd_per_gpu_hour: give a price for every accelerator searched or none; "
                                f"missing {', '.join(missing)}", params=param)
    return out


def launch_checkpoint(spec, given) -> str:
    """The checkpoint a launch names for a model (without `served_model`; a draft's always): a catalog
    model's Hugging Face repo (its config's source), else the model as given (a path or a repo id).

    >>> from llm_cost.catalog import load_model
    >>> launch_checkpoint(load_model("llama-3-8b"), "llama-3-8b")
    'meta-llama/Meta-Llama-3-8B'
    """
    from llm_cost.planner.emit import hub_repo

    return hub_repo(spec.source) or _text(given, spec)


def run_plan(request: PlanRequest, *, progress=None, on_warning=None) -> PlanOutcome:
    """Plan `request` (module doc); `progress(label)`: a context manager whose value is called with
    (done, total, count=k) as a served check's candidates finish (a progress bar; None: none);
    `on_warning(line)` as a warning arises (before the serving it is about), each also in `warnings`.

    Parameters
    ----------
    request : PlanRequest
        What to plan, and what to do with the frontier.
    progress : callable, optional
        Makes the served check's progress callback from its label.
    on_warning : callable, optional
        Told each warning line as it arises.

    Returns
    -------
    PlanOutcome
        The grid, the frontier and its rows, and what was served, split or emitted.

    Examples
    --------
    >>> out = run_plan(PlanRequest(model="llama-3-8b", gpu=("h100-sxm",), gpus=2, osl=128, profile="lecture",
    ...                            ttft_s=0.5, tpot_s=0.02, rate=(2.0,)))
    >>> out.result.counts["meet"], out.rows[0]["users_in_flight"] == out.rows[0]["batch"] * out.rows[0]["replicas"]
    (134, True)
    >>> out.request.served_options_given, out.served is None
    (('rate',), True)
    """
    if not isinstance(request, PlanRequest):
        raise InvalidValueError(f"request must be a PlanRequest, got {type(request).__name__}", params=("request",))
    from llm_cost.planner import best_split, plan
    from llm_cost.planner.plan_served import serve_settings, served_check
    from llm_cost.planner.rows import disaggregated_rows, plan_rows

    settings = serve_settings(request) if request.verify is not None else None  # before the search: one line
    spec, grid, target, refs = plan_search(request)
    prices = prices_of(request.usd_per_gpu_hour, grid.space)
    drafts = {variant.draft.name: launch_checkpoint(variant.draft, refs.get(variant.draft.name, variant.draft.name))
              for variant in grid.variants if getattr(variant, "draft", None) is not None}
    result = plan(grid, target, usd_per_gpu_hour=prices)
    out = PlanOutcome(request, spec, grid, target, refs, prices, result)
    if request.disaggregate and request.emit_engine is not None:
        raise InvalidValueError("emit_engine takes the colocated frontier (one replica's launch command); drop "
                                "disaggregate", params=("emit_engine", "disaggregate"))
    if request.disaggregate and request.verify is None:
        splits, missing = best_split(grid, target)
        return _with(out, split_rows=disaggregated_rows(grid, splits, prices, refs, usd_per_kwh=request.usd_per_kwh),
                     missing=missing)
    engine = emit_choice(request.emit_engine, request.emit_k8s)
    rows = plan_rows(result, refs, usd_per_kwh=request.usd_per_kwh)
    for row in rows:  # a static batch per replica, one in flight (a pipeline's stages do not fill with one)
        row["users_in_flight"] = row["batch"] * row["replicas"]
    out = _with(out, rows=rows)
    if request.verify is not None:
        splits = None
        if request.disaggregate:
            found, _ = best_split(grid, target)
            splits = found, disaggregated_rows(grid, found, prices, refs, usd_per_kwh=request.usd_per_kwh)
        warnings = []

        def told(line: str) -> None:
            warnings.append(line)
            if on_warning is not None:
                on_warning(line)
        rows, check = served_check(request, result, rows, target, settings, splits=splits, progress=progress,
                                   on_warning=told)
        out = _with(out, rows=rows, served=check, warnings=tuple(warnings))
        if check.stopped and not check.stopped[0]:
            return out
    if engine is not None:
        checkpoints = (request.served_model or launch_checkpoint(spec, request.model), drafts)
        try:
            out = _with(out, launch=_launch(out, engine, checkpoints))
        except LlmCostError as err:  # said after the rows (and the launch's notes), as the launch would have been
            out = _with(out, launch_refusal=err)
    return out


def _with(out: PlanOutcome, **changes) -> PlanOutcome:
    from dataclasses import replace

    return replace(out, **changes)


def _launch(out: PlanOutcome, engine: str, checkpoints: tuple) -> Launch:
    """The best row's `Launch` on `engine`, as it was served (its prompt chunks, prefix caching); a row
    in the format the model's checkpoint ships (DeepSeek-V3's FP8) loads the checkpoint as it is."""
    rows, request = out.rows, out.request
    if not rows:
        raise InvalidValueError("emit_engine: no configuration meets the target, nothing to deploy",
                                params=("emit_engine",))
    best, served = rows[0], None
    if out.served is not None:
        if not best.get("meets_served_slo"):  # the served ranking puts a row that meets it first
            raise InvalidValueError(f"emit_engine: no verified configuration meets the served SLO (the "
                                    f"{out.served.slo_stat} of TTFT and TPOT within the target), nothing to deploy; "
                                    "verify more rows or lower the load", params=("emit_engine",))
        gpu = next(group.gpu for group in out.grid.space.groups if group.gpu.name == best["gpu_name"])
        served = out.served.settings.config_fields(gpu)
    quant = getattr(out.grid.space.model, "quantization", None)
    if quant is not None and getattr(quant, "method", None) == best["weights"]:  # the repo ships it
        best = dict(best, weights="checkpoint")
    from llm_cost.planner.emit import k8s_deployment, launch_command, launch_notes

    name, drafts = checkpoints
    kind = best.get("speculation") or ""
    draft = drafts.get(kind[len("draft "):]) if kind.startswith("draft ") else None
    prequantized = request.served_model is not None
    how = dict(draft_model=draft, served=served, prequantized=prequantized)
    notes = tuple(launch_notes(best, engine, name, served=served, prequantized=prequantized))
    try:
        write = k8s_deployment if request.emit_k8s else launch_command
        return Launch(notes, write(best, engine, name, out.grid.isl, **how), bool(request.emit_k8s))
    except LlmCostError as err:  # the notes are said all the same, before the refusal
        err.launch_notes = notes
        raise
