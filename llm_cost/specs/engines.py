"""Serving engines: each one's defaults for serving (tokens per iteration, sequences, chunking, K/V
block size), as its own code states them, and its name as points files spell it.

An engine's fixed costs (scheduling per iteration, launches per layer, time to first token beyond
the prefill) are a profile's, fitted per engine where the training files have that engine
(`Profile.engine_costs`, `Profile.for_engine`); this module holds no fitted number.

    tokens per iteration   the budget of one iteration's rows (decode rows first, then prompt chunks)
    max sequences          the most sequences one iteration runs
    K/V block              tokens per paged block (1: token-granular pages)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_cost.errors import check_choice


@dataclass(frozen=True)
class Engine:
    """One serving engine's defaults (a GPU with at least `large_gpu_bytes` of memory takes the large
    budget), with the source of each."""

    name: str
    tokens_per_iteration: int  # on a large GPU
    max_sequences: int  # on a large GPU
    kv_block_tokens: int
    chunked_prefill: bool = True  # prompts longer than the budget run in chunks
    small_gpu_tokens_per_iteration: int = 0  # 0: the same as a large GPU's
    small_gpu_max_sequences: int = 0
    large_gpu_bytes: float = 0.0  # 0: every GPU takes the large defaults
    small_gpu_names: tuple[str, ...] = ()  # GPUs (names, lower case, as a part) that take the small ones anyway
    continuous: bool = True  # iteration-level batching (False: static batches only, e.g. gpt-fast)
    paged: bool = True  # K/V in blocks of kv_block_tokens (False: each sequence's K/V contiguous, its max reserved)
    source: str = ""

    def budget(self, gpu) -> tuple[int, int]:
        """(tokens per iteration, max sequences) on `gpu` (an Accelerator: its usable memory and name)."""
        name = gpu.name.lower()
        if self.large_gpu_bytes and (gpu.memory_available_bytes < self.large_gpu_bytes
                                     or any(part in name for part in self.small_gpu_names)):
            return (self.small_gpu_tokens_per_iteration or self.tokens_per_iteration,
                    self.small_gpu_max_sequences or self.max_sequences)
        return self.tokens_per_iteration, self.max_sequences


GIB = 2**30
ENGINES: dict[str, Engine] = {
    # The project's defaults before engines had names (README "Calibration"): 8,192 tokens, 256 sequences.
    "generic": Engine("generic", 8192, 256, 16, source="the project's current-engine default: vLLM V1 / SGLang / "
                      "TensorRT-LLM's 8,192-token budget, vLLM's 256 sequences, 16-token blocks"),
    "vllm": Engine("vllm", 8192, 1024, 16, small_gpu_tokens_per_iteration=2048, small_gpu_max_sequences=256,
                   large_gpu_bytes=70 * GIB, small_gpu_names=("a100",),
                   source="vllm/engine/arg_utils.py EngineArgs.get_batch_defaults, OPENAI_API_SERVER: 8192 tokens and "
                          "1024 sequences on a GPU of >= 70 GiB other than A100, else 2048 and 256; block_size 16"),
    "sglang": Engine("sglang", 8192, 4096, 1, small_gpu_tokens_per_iteration=2048, large_gpu_bytes=35 * 1024**3,
                     source="sglang/srt/server_args.py: chunked_prefill_size 8192 for GPUs of 35-160 GB (2048 "
                            "below, 16384 above: not modelled); page_size 1; max_running_requests = "
                            "max_total_num_tokens // 2 (scheduler.py): no cap below what the K/V holds, 4096 here"),
    # TensorRT-LLM 1.x does not chunk prompts unless told: the LLM API's enable_chunked_prefill defaults to
    # False (BaseLlmArgs in tensorrt_llm/llmapi/llm_args.py, read at 1.0.0rc4; TorchLlmArgs' reference at
    # 1.4.0rc4 and latest says the same, so 1.1 between them does too) and trtllm-serve 1.1.0rc5 has no flag
    # for it (tests/data/engine_flags.json): served here with whole prompts. max_num_tokens 8192 is the
    # same file's default (Field(default=8192)); the trtllm launch command (`planner.emit`) sets
    # max_num_tokens to the plan's prompt + batch, so a plan's row needs no chunking to run as planned.
    "trtllm": Engine("trtllm", 8192, 2048, 32, chunked_prefill=False,
                     source="TensorRT-LLM 1.x LLM API (trtllm-serve): enable_chunked_prefill False by default "
                            "(tensorrt_llm/llmapi/llm_args.py BaseLlmArgs, 1.0.0rc4; "
                            "nvidia.github.io/TensorRT-LLM/1.4.0rc4/llm-api/reference/TorchLlmArgs.html), no "
                            "trtllm-serve flag for it at 1.1.0rc5 (commands/trtllm-serve); max_num_tokens 8192 "
                            "(llm_args.py); max_batch_size 2048 and KV tokens_per_block 32 as the project reads "
                            "BuildConfig / KvCacheConfig (not checked against a stored copy)"),
    # TensorRT-LLM before 1.0 as train.csv measured it: gptSessionBenchmark's static batches (the whole
    # batch's prompts in one context pass, then its decode steps), a compiled engine with its own fixed
    # costs, not the 1.x served loop above (`engine_of`: version < 1.0).
    "trtllm-0": Engine("trtllm-0", 1 << 20, 1 << 20, 64, chunked_prefill=False, continuous=False,
                       source="TensorRT-LLM 0.x benchmarks/cpp gptSessionBenchmark: one static batch, context "
                              "phase unchunked; KV tokens_per_block 64 (0.x build default, as the project reads "
                              "its docs; not checked against a stored copy)"),
    "lmdeploy": Engine("lmdeploy", 8192, 256, 64,
                       source="lmdeploy TurbomindEngineConfig: max_prefill_token_num 8192, cache_block_seq_len 64, "
                              "max_batch_size 256 on CUDA GPUs (as the project reads its docs)"),
    "gpt-fast": Engine("gpt-fast", 1 << 20, 1 << 20, 1 << 20, chunked_prefill=False, continuous=False, paged=False,
                       source="pytorch-labs/gpt-fast generate.py: one static batch, the whole prompt in one pass, "
                              "K/V preallocated to max_seq_length (no server, no paging)"),
    "llama.cpp": Engine("llama.cpp", 2048, 4, 1 << 20, paged=False,
                        source="llama.cpp llama-server: n_batch 2048 tokens per decode call (n_ubatch 512 physical), "
                               "4 parallel slots (-np auto), K/V contiguous per slot (no paging)"),
}
NAMES = tuple(ENGINES)

# How points files and users spell them: the first pattern found in the text names the engine.
_SPELLINGS = (("trtllm", r"tensorrt|trt[-_ ]?llm|trtllm"), ("sglang", r"sglang"), ("vllm", r"vllm"),
              ("lmdeploy", r"lmdeploy|turbomind"), ("gpt-fast", r"gpt[-_ ]?fast"),
              ("llama.cpp", r"llama\.?cpp|llama-bench|llama-server|ggml"))


def engine(name: str) -> Engine:
    """The engine of that exact name (one of NAMES); any other name is refused, naming them."""
    return ENGINES[check_choice("engine", name.strip().lower(), NAMES)]


# Engines whose major versions behave differently: (engine, first major of the current one, the older
# one's name). A version below it takes the older engine; no version, or one without a number, the current.
_ERAS = (("trtllm", 1, "trtllm-0"),)


def engine_of(text: str, version: str = "") -> str:
    """The engine a free text names (a points file's `engine` or `source`) at `version` (its
    `engine_version`): 'vLLM (InferenceX ...)' is vllm, 'TensorRT-LLM' trtllm (1.x, current), at version
    '0.9.0' trtllm-0 (`_ERAS`); an engine's exact name is itself; text naming none of them is 'generic'.

    >>> engine_of("vLLM (InferenceX fixed-seq-len benchmark)"), engine_of("TensorRT-LLM"), engine_of("HF transformers")
    ('vllm', 'trtllm', 'generic')
    >>> engine_of("TensorRT-LLM", "0.9.0"), engine_of("TensorRT-LLM", "1.1.0rc5"), engine_of("trtllm-0")
    ('trtllm-0', 'trtllm', 'trtllm-0')
    """
    low = (text or "").strip().lower()
    if low in ENGINES:
        return low
    name = next((name for name, pattern in _SPELLINGS if re.search(pattern, low)), "generic")
    major = _major(version)
    for current, first_major, older in _ERAS:
        if name == current and major is not None and major < first_major:
            return older
    return name


def _major(version: str) -> int | None:
    """The major number of a version text ('v0.9.0', 'lmsysorg/sglang:v0.5.9-cu130'): the first
    'N.M' in it; None when it has none ('not recorded')."""
    found = re.search(r"(?<![\w.])v?(\d+)\.\d+", (version or "").lower())
    return int(found.group(1)) if found else None
