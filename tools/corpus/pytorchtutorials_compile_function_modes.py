# Torch function modes with torch.compile, after PyTorch's recipe "(beta) Utilizing Torch Function
# modes with torch.compile" (recipes_source/torch_compile_torch_function_modes.py), run on the CPU:
# its exit on CUDA-less machines (torch.cuda.get_device_capability) left out, the recipe's asserts
# kept, each followed by a print of what it checks.  Then the same mode around calls that replay
# (a compiled function called again with and without the mode), and the other contexts a
# compiled function must not run past: autocast and a Tensor subclass's __torch_function__.
import torch

from torch.overrides import BaseTorchFunctionMode


# Define our mode, Note: ``BaseTorchFunctionMode``
# implements the actual invocation of func(..)
class AddToMultiplyMode(BaseTorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func == torch.Tensor.add:
            func = torch.mul

        return super().__torch_function__(func, types, args, kwargs)


@torch.compile()
def test_fn(x, y):
    return x + y * x  # Note: infix operators map to torch.Tensor.* methods


x = torch.rand(2, 2)
y = torch.rand_like(x)

with AddToMultiplyMode():
    z = test_fn(x, y)

assert torch.allclose(z, x * y * x)
print("mode around the compiled call:", torch.allclose(z, x * y * x))

# The mode can also be used within the compiled region as well like this:


@torch.compile()
def test_fn(x, y):
    with AddToMultiplyMode():
        return x + y * x  # Note: infix operators map to torch.Tensor.* methods


x = torch.rand(2, 2)
y = torch.rand_like(x)
z = test_fn(x, y)

assert torch.allclose(z, x * y * x)
print("mode inside the compiled region:", torch.allclose(z, x * y * x))

# -- beyond the recipe: later calls, which a compiler may serve from its cache ------------------
a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
b = torch.tensor([[0.5, 1.5], [2.0, 3.0]])
for call in range(3):
    print("inside, call", call, test_fn(a, b))


@torch.compile()
def plain_fn(x, y):
    return x + y * x


print("no mode:", plain_fn(a, b))
print("no mode again:", plain_fn(a, b))
with AddToMultiplyMode():
    print("mode around a cached function:", plain_fn(a, b))
print("no mode after:", plain_fn(a, b))


@torch.compile()
def matmul(x):
    return x @ x


print("matmul dtype:", matmul(a).dtype, matmul(a).dtype)
with torch.autocast("cpu", dtype=torch.bfloat16):
    print("under autocast:", matmul(a).dtype, matmul(a).dtype)


@torch.compile()
def autocast_inside(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return x @ x


print("autocast inside:", [autocast_inside(a).dtype for _ in range(3)])


class AddIsMul(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.add or func is torch.add:
            func = torch.mul
        return super().__torch_function__(func, types, args, kwargs or {})


@torch.compile()
def adds(p, q):
    return torch.add(p, q)


print("plain tensors:", adds(a, b), adds(a, b))
sub = a.as_subclass(AddIsMul)
print("subclass:", adds(sub, b).as_subclass(torch.Tensor), adds(sub, b).as_subclass(torch.Tensor))
