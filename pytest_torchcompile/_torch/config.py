"""Inductor's config keys the plugin sets, and the lists torch checks options against.

Every `inductor_config.patch` of the plugin goes through `patched`, with
one of the settings below (merged where several apply). Config keys are
torch's names, so they live here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import torch._inductor.config as inductor_config

#: Inductor settings that make generated C++ independent of the host: no
#: OpenMP blocks whatever the thread count, and 256-bit vectors on AVX2 and
#: AVX-512 machines alike.
HOST_PINNED_CONFIG: dict[str, object] = {"cpp.threads": 1, "cpp.simdlen": 256}
#: compiled code calls eager's random ops, so dropout draws what eager draws.
FALLBACK_RANDOM: dict[str, object] = {"fallback_random": True}
#: every generated Triton kernel module gets a benchmark harness (`get_args()`, `call(args)`).
BENCHMARK_KERNEL: dict[str, object] = {"benchmark_kernel": True}
#: how a user lists Inductor's options (named in a message about a wrong one).
OPTIONS_LISTING = "torch._inductor.list_options()"


def patched(*settings: Mapping[str, object] | None) -> contextlib.AbstractContextManager[None]:
    """Inductor's config with `settings` merged in order (later wins) for a while."""
    merged: dict[str, object] = {}
    for part in settings:
        merged.update(part or {})
    return inductor_config.patch(merged)


def inductor_options() -> list[str]:
    """Every Inductor config name `options=` accepts."""
    from torch._inductor import list_options

    return list(list_options())


def mode_options(mode: str | None, dynamic: bool | None) -> dict[str, object]:
    """The Inductor config a `mode=` stands for (what torch.compile applies for it)."""
    from torch._inductor import list_mode_options

    return dict(list_mode_options(mode or "default", dynamic))


#: the modes whose option sets turn on Inductor's own CUDA graphs (`list_mode_options`).
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
CUDAGRAPHS_KEY = "triton.cudagraphs"


def inductor_cudagraphs(mode: str | None, options: Mapping[str, object] | None) -> bool:
    """Whether Inductor wraps the compiled call in its own CUDA graphs.

    `torch.compile`'s modes "reduce-overhead" and "max-autotune" turn on
    Inductor's `triton.cudagraphs`, `options` can set it either way, and so
    can Inductor's global config.
    """
    if options and CUDAGRAPHS_KEY in options:
        return bool(options[CUDAGRAPHS_KEY])
    if mode in CUDAGRAPH_MODES:
        return True
    return bool(
        getattr(getattr(inductor_config, "triton", None), "cudagraphs", False)
    )  # an Inductor without that key: not


#: Inductor settings that change how generated C++ is compiled (the ISA picked, math flags), not what it
#: says: a program file loads its kernels with the values the capture compiled them with.
KERNEL_BUILD_KEYS = (
    "cpp.simdlen",
    "cpp.vec_isa_ok",
    "cpp.enable_floating_point_contract_flag",
    "cpp.enable_unsafe_math_opt_flag",
)


def kernel_build_settings() -> dict[str, object]:
    """The current values of `KERNEL_BUILD_KEYS` (those this Inductor has).

    Read one by one, after every compiled call: a copy of the whole config
    (~600 options, deep-copied) costs more than the rest of the capture's reading.
    """
    settings = {}
    for key in KERNEL_BUILD_KEYS:
        group, _, name = key.rpartition(".")
        try:
            settings[key] = getattr(getattr(inductor_config, group), name)
        except AttributeError:
            continue
    return settings
