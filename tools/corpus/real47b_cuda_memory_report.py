"""A notes repository's "what hardware am I on" cell: it reads the CUDA allocator's statistics
through torch.cuda.memory, wraps the calls that need a GPU, annotates a step with NVTX and runs it
on a side stream when there is one; on a CPU build each probe answers or fails as PyTorch's."""
import torch


def gib(n):
    return f"{n / 1024 ** 3:.3f} GiB"


print("cuda available:", torch.cuda.is_available(), "devices:", torch.cuda.device_count())
mem = torch.cuda.memory
print("allocated:", gib(mem.memory_allocated(0)), "reserved:", gib(mem.memory_reserved(0)))
print("peak allocated:", gib(mem.max_memory_allocated()), "peak reserved:", gib(mem.max_memory_reserved()))
print("stats:", dict(mem.memory_stats()), "nested:", mem.memory_stats_as_nested_dict())
print("same function:", mem.memory_allocated is torch.cuda.memory_allocated)
mem.empty_cache()

for label, probe in (("mem_get_info", lambda: mem.mem_get_info()),
                     ("memory_summary", lambda: mem.memory_summary()),
                     ("reset_peak_memory_stats", lambda: mem.reset_peak_memory_stats()),
                     ("nvtx.range_push", lambda: torch.cuda.nvtx.range_push("forward")),
                     ("nvtx.mark", lambda: torch.cuda.nvtx.mark("checkpoint")),
                     ("stream capturing", lambda: torch.cuda.is_current_stream_capturing()),
                     ("CUDAGraph", lambda: torch.cuda.CUDAGraph()),
                     ("Stream", lambda: torch.cuda.streams.Stream()),
                     ("xpu mem_get_info", lambda: torch.xpu.memory.mem_get_info())):
    try:
        print(label, "->", probe())
    except (AssertionError, RuntimeError, KeyError, AttributeError) as err:
        print(label, "->", type(err).__name__, err)

# A training step that would run on a side stream on a GPU: no stream here, so stream(None).
side = torch.cuda.Stream() if torch.cuda.is_available() else None
weights = torch.linspace(-1.0, 1.0, 6).reshape(2, 3).requires_grad_()
with torch.cuda.stream(side):
    try:
        with torch.cuda.nvtx.range("step {}", 1):
            loss = (weights ** 2).sum()
    except RuntimeError as err:
        print("nvtx.range ->", err)
        loss = (weights ** 2).sum()
loss.backward()
print("loss:", loss.item(), "grad:", weights.grad)
print("xpu allocated:", torch.xpu.memory.memory_allocated(), "after the step:", gib(mem.memory_allocated()))
