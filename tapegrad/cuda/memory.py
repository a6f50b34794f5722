"""torch.cuda.memory: the CUDA allocator's statistics and controls, the same objects as torch.cuda's
(scripts call `torch.cuda.memory.mem_get_info()` or `torch.cuda.memory.memory_summary()` through the
submodule, which PyTorch imports with torch.cuda)."""
from . import (empty_cache, list_gpu_processes, max_memory_allocated, max_memory_cached,  # noqa: F401
               max_memory_reserved, mem_get_info, memory_allocated, memory_cached, memory_reserved,
               memory_snapshot, memory_stats, memory_stats_as_nested_dict, memory_summary,
               reset_accumulated_memory_stats, reset_max_memory_allocated, reset_max_memory_cached,
               reset_peak_memory_stats, set_per_process_memory_fraction)
