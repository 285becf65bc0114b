"""The K/V cache's element widths: bytes of one cached K or V element by dtype, and the range a width
given as a number may take. Apart from `deployment` (which imports KV_DTYPES) so that a command that
only counts a model's bytes (`llm-cost model`) does not import the deployment and the profiles."""

# Bytes of one cached K or V element by dtype (int4: two per byte; scales not counted)
KV_DTYPES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
# bytes of one cached K or V element given as a number: 1 bit to FP64 and then some (a subnormal
# makes the capacity infinite)
KV_BYTES_RANGE = (1 / 16, 16.0)
