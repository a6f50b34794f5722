"""torch._inductor.config: the back-end settings scripts assign before torch.compile.  Kept as
set; they change nothing tapegrad computes (tapegrad/_config_settings.py)."""
from __future__ import annotations as _annotations

from .._config_settings import install

# name -> PyTorch's default (torch 2.13); a dict is a group of settings (config.triton.X).
_DEFAULTS = {
    "coordinate_descent_tuning": False,
    "fx_graph_cache": True,
    "freezing": False,
    "max_autotune": False,
    "max_autotune_gemm": False,
    "epilogue_fusion": True,
    "force_fuse_int_mm_with_mul": False,
    "shape_padding": True,
    "debug": False,
    "fallback_random": False,
    "conv_1x1_as_mm": False,
    "cpp_wrapper": False,
    "benchmark_kernel": False,
    "aggressive_fusion": False,
    "layout_optimization": True,
    "split_reductions": True,
    "allow_buffer_reuse": True,
    "emulate_precision_casts": False,
    "autotune_local_cache": True,
    "triton": {
        "unique_kernel_names": True,
        "cudagraphs": False,
        "cudagraph_trees": True,
        "autotune_pointwise": True,
        "descriptive_names": "original_aten",
        "multi_kernel": 0,
    },
    "cpp": {
        "threads": -1,
        "simdlen": None,
    },
}

install(__name__, _DEFAULTS)
