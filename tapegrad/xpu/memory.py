"""torch.xpu.memory: the XPU allocator's functions, the same objects as torch.xpu's."""
from . import (empty_cache, max_memory_allocated, max_memory_reserved, mem_get_info,  # noqa: F401
               memory_allocated, memory_reserved)
