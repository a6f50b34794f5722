"""TorchFunctionMode as tutorials and blog posts use it: replacing calls, forcing factory dtypes,
banning ops, nested modes and the mode stack, modes deferring to Tensor subclasses, upcasting,
NaN checks and call tracing."""
import torch
from torch.overrides import TorchFunctionMode

class ReplaceAddWithSub(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.add:
            return torch.sub(*args, **kwargs)
        if func is torch.Tensor.__add__:
            return args[0] - args[1]
        return func(*args, **kwargs)

a = torch.tensor([5.0, 6.0])
b = torch.tensor([1.0, 2.0])
with ReplaceAddWithSub():
    print(torch.add(a, b))
    print(a + b)
    print(a.add(b))
print(torch.add(a, b))

class Float64Mode(TorchFunctionMode):
    """Force factory functions to float64."""
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.zeros, torch.ones, torch.rand, torch.randn, torch.tensor, torch.empty, torch.full, torch.arange):
            if kwargs.get("dtype") is None and func is not torch.arange:
                kwargs["dtype"] = torch.float64
        return func(*args, **kwargs)

with Float64Mode():
    print(torch.zeros(2).dtype, torch.ones(2, 2).dtype, torch.tensor([1.0]).dtype)
    print(torch.full((2,), 3.0).dtype, torch.arange(3).dtype)
    print(torch.randn(2).dtype)
print(torch.zeros(2).dtype)

class NoSinMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.sin, torch.Tensor.sin):
            raise RuntimeError(f"{func.__name__} is banned")
        return func(*args, **(kwargs or {}))

try:
    with NoSinMode():
        torch.sin(a)
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    with NoSinMode():
        a.sin()
except RuntimeError as e:
    print("RuntimeError:", e)
print(torch.cos(a))

from torch.overrides import TorchFunctionMode, resolve_name

log = []

class Tag(TorchFunctionMode):
    def __init__(self, tag):
        super().__init__()
        self.tag = tag
    def __torch_function__(self, func, types, args=(), kwargs=None):
        log.append((self.tag, resolve_name(func)))
        return func(*args, **(kwargs or {}))

x = torch.ones(2)
with Tag("outer"):
    with Tag("inner"):
        y = torch.mul(x, 3)
    z = torch.neg(y)
for entry in log:
    print(entry)
print(y, z)
log.clear()

outer = Tag("A")
with outer:
    with outer:
        torch.exp(x)
print(log)
log.clear()

from torch.overrides import _get_current_function_mode_stack
print(len(_get_current_function_mode_stack()))
with Tag("s1"), Tag("s2"):
    st = _get_current_function_mode_stack()
    print(len(st), [m.tag for m in st])
print(len(_get_current_function_mode_stack()))

class Doubler(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.sum:
            return out * 2
        return out

with Doubler():
    with Doubler():
        print(torch.sum(torch.tensor([1.0, 2.0])))

from torch.overrides import TorchFunctionMode, resolve_name

class Sub(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        print("  Sub sees", resolve_name(func))
        return super().__torch_function__(func, types, args, kwargs)

class Defer(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = resolve_name(func)
        print("mode sees", name, [t.__name__ for t in types])
        if any(issubclass(t, Sub) for t in types):
            return NotImplemented
        return func(*args, **(kwargs or {}))

s = torch.ones(2).as_subclass(Sub)
p = torch.ones(2)
with Defer():
    r1 = torch.add(s, 1)
    r2 = torch.add(p, 1)
    r3 = s.mul(3)
print(type(r1).__name__, type(r2).__name__, type(r3).__name__)
print(r1, r3.as_subclass(torch.Tensor))

class Upcast(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and out.dtype == torch.float32:
            return out.double()
        return out

with Upcast():
    z = torch.ones(3) * 2
    w = z.sum()
print(z.dtype, w.dtype, w)

class NanCheck(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and out.is_floating_point() and torch.isnan(out).any():
            raise RuntimeError(f"NaN produced by {resolve_name(func)}")
        return out

try:
    with NanCheck():
        v = torch.tensor([1.0, -1.0])
        u = v.log()
except RuntimeError as e:
    print(e)
try:
    with NanCheck():
        q = torch.sqrt(torch.tensor([-1.0]))
except RuntimeError as e:
    print(e)

class Tracer(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.depth = 0
    def __torch_function__(self, func, types, args=(), kwargs=None):
        print("  " * self.depth + str(resolve_name(func)))
        self.depth += 1
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.depth -= 1

with Tracer():
    a = torch.randn(2, 3).abs()
    b = torch.nn.functional.softmax(a, dim=-1)
    c = torch.argmax(b, dim=1)
    d = torch.where(b > 0.3, b, torch.zeros_like(b))
print(c.shape, d.shape)
