"""torch.cuda.graphs: CUDA graph capture, the same objects as torch.cuda's (all refuse without CUDA)."""
from . import (CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing,  # noqa: F401
               make_graphed_callables)
