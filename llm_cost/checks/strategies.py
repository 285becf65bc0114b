"""Hypothesis strategies for llm_cost's inputs: import them into your own property tests.

    from hypothesis import given
    from llm_cost.checks import strategies as lst

    @given(model=lst.models(), gpu=lst.accelerators(), batch=lst.batches)
    def test_mine(model, gpu, batch): ...

Constants are strategies; `models()`, `accelerators()`, `distributions()` and their kin are
functions returning one (they take options, or read the catalog when called). The ranges are
the ones the package's own invariants (`properties`, `formulas`) run under, so a value drawn
here is one the library accepts. Defined once here; nothing in this module imports the rest of
`llm_cost.checks`.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from llm_cost.catalog import catalog_names, load_accelerator, load_model
from llm_cost.specs import WEIGHT_FORMATS, Accelerator, ModelSpec, MoESpec, Profile, WeightFormat

__all__ = [
    "models", "catalog_models", "built_models",
    "accelerators", "catalog_accelerators", "built_accelerators",
    "efficiencies", "fixed_times_s", "profiles",
    "batches", "rows_per_sequence", "contexts",
    "bits", "group_sizes", "weight_formats", "kv_widths",
    "alphas", "gammas", "small_gammas", "costs", "temperatures",
    "probability_weights", "distributions", "tree_widths", "hit_rates",
]

# ---- models ---------------------------------------------------------------------------------


def catalog_models() -> st.SearchStrategy[ModelSpec]:
    """Every model in the shipped catalog (Llama 3, GPT-3, Mixtral, DeepSeek-V3, ...)."""
    return st.sampled_from(catalog_names("models")).map(load_model)


@st.composite
def _built_model(draw, moe: bool) -> ModelSpec:
    kv_heads = draw(st.sampled_from([1, 2, 4, 8, 16]))
    heads = kv_heads * draw(st.sampled_from([1, 2, 4, 8]))  # GQA: kv heads divide query heads
    head_dim = draw(st.sampled_from([64, 96, 128, 256]))
    layers = draw(st.integers(min_value=1, max_value=96))
    spec = None
    if moe:
        experts = draw(st.integers(min_value=2, max_value=256))
        spec = draw(st.builds(
            MoESpec, num_experts=st.just(experts),
            experts_per_token=st.integers(min_value=1, max_value=min(8, experts)),
            expert_intermediate_size=st.integers(min_value=1, max_value=64).map(lambda units: 256 * units),
            num_shared_experts=st.integers(min_value=0, max_value=2),
            first_dense_layers=st.integers(min_value=0, max_value=min(3, layers)),
            router_bias=st.booleans()))
    return draw(st.builds(
        ModelSpec, name=st.just("built-moe" if moe else "built-dense"),
        hidden_size=st.just(heads * head_dim), num_layers=st.just(layers), num_heads=st.just(heads),
        num_kv_heads=st.just(kv_heads), head_dim=st.just(head_dim),
        intermediate_size=st.integers(min_value=1, max_value=128).map(lambda units: 256 * units),
        vocab_size=st.integers(min_value=1_000, max_value=256_000),
        mlp_kind=st.sampled_from(["gated", "plain"]), norm_kind=st.sampled_from(["rms", "layer"]),
        tie_word_embeddings=st.booleans(), qkv_bias=st.booleans(), moe=st.just(spec)))


def built_models(moe: bool | None = None) -> st.SearchStrategy[ModelSpec]:
    """Random valid GQA ModelSpecs, 1-96 layers, width up to 32k: dense (moe=False), MoE (True) or both."""
    if moe is None:
        return st.one_of(_built_model(False), _built_model(True))
    return _built_model(moe)


def models() -> st.SearchStrategy[ModelSpec]:
    """Catalog models or built ones, dense and MoE: what a check over "any model" should take."""
    return st.one_of(catalog_models(), built_models())


# ---- accelerators ---------------------------------------------------------------------------


def catalog_accelerators() -> st.SearchStrategy[Accelerator]:
    """Every datasheet in the shipped catalog (A100, H100, H200, B200, L40S, MI300X)."""
    return st.sampled_from(catalog_names("hardware")).map(load_accelerator)


def built_accelerators() -> st.SearchStrategy[Accelerator]:
    """Plausible datasheets: 8-288 GB, 0.3-10 TB/s, 50-5000 dense BF16 TFLOP/s."""
    return st.builds(Accelerator, name=st.just("built-gpu"),
                     memory_bytes=st.floats(min_value=8e9, max_value=288e9),
                     bandwidth_bytes_per_s=st.floats(min_value=3e11, max_value=1e13),
                     bf16_flops_per_s=st.floats(min_value=5e13, max_value=5e15))


def accelerators() -> st.SearchStrategy[Accelerator]:
    """Catalog datasheets or built ones."""
    return st.one_of(catalog_accelerators(), built_accelerators())


# ---- profiles and pass shapes ---------------------------------------------------------------

efficiencies = st.floats(min_value=0.05, max_value=1.0)  # 5% .. datasheet peak: 0 is rejected
fixed_times_s = st.floats(min_value=0.0, max_value=5e-3)  # fixed cost per pass: 0 .. 5 ms
profiles = st.builds(Profile, name=st.just("random"), bw_efficiency=efficiencies,  # every knob free
                     compute_efficiency=efficiencies, fixed_time_s=fixed_times_s,
                     read_input_embedding=st.booleans(), count_kv=st.booleans())
batches = st.integers(min_value=1, max_value=4096)  # sequences per pass: one .. a very large server batch
rows_per_sequence = st.integers(min_value=1, max_value=512)  # new rows per sequence: decode .. a prefill chunk
contexts = st.integers(min_value=0, max_value=131_072)  # cached tokens: none .. 128k

# ---- weights and KV -------------------------------------------------------------------------

bits = st.floats(min_value=1.0, max_value=16.0)  # bits per weight, 1-bit .. BF16
group_sizes = st.sampled_from([32, 64, 128, 256])  # quantization groups in use
weight_formats = st.one_of(  # the named formats, or any bits with a 16-bit scale and zero per group
    st.sampled_from(sorted(set(WEIGHT_FORMATS.values()), key=lambda weight_format: weight_format.name)),
    st.builds(WeightFormat, name=st.just("random"), bits=bits, group_size=group_sizes,
              scale_bits=st.just(16.0), zero_bits=st.just(16.0), keep_embeddings_bf16=st.booleans()))
kv_widths = st.sampled_from([0.5, 1.0, 2.0, 4.0])  # KV bytes per element: FP4, FP8, BF16, FP32

# ---- speculative decoding -------------------------------------------------------------------

alphas = st.floats(min_value=0.0, max_value=1.0)  # acceptance rate, both ends included
gammas = st.integers(min_value=0, max_value=10**6)  # draft tokens: 0 (no drafting) .. far past any optimum
small_gammas = st.integers(min_value=0, max_value=64)  # draft tokens a loop can afford to enumerate
costs = st.floats(min_value=0.0, max_value=2.0)  # c or c_hat: draft cost / target cost, free .. twice the target
temperatures = st.one_of(st.just(0.0), st.just(1.0),  # greedy and plain sampling pinned, then any
                         st.floats(min_value=0.05, max_value=4.0))
probability_weights = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=2, max_size=12)  # raw, unnormalized
tree_widths = st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=6)  # children per level, 1-6 levels
hit_rates = st.lists(st.floats(min_value=0.0, max_value=1.0),  # top-1,2,4,8 hit rates: non-decreasing
                     min_size=4, max_size=4).map(sorted)


def _normalized(raw: list[float]) -> np.ndarray:
    weights = np.array(raw)
    return weights / weights.sum()


def distributions(pair: bool = False, min_size: int = 2, max_size: int = 12) -> st.SearchStrategy:
    """Probability vectors (numpy, sum 1, zeros allowed) from non-negative weights; pair=True: (p, q) on one vocabulary."""
    sizes = st.integers(min_value=min_size, max_value=max_size)

    def vector(size: int) -> st.SearchStrategy[np.ndarray]:
        raw = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=size, max_size=size)
        return raw.filter(lambda weights: sum(weights) > 1e-6).map(_normalized)

    if pair:
        return sizes.flatmap(lambda size: st.tuples(vector(size), vector(size)))
    return sizes.flatmap(vector)
