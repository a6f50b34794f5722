# torch.compiler.set_stance, after PyTorch's recipe "Dynamic Compilation Control with
# torch.compiler.set_stance" (its CUDA timing section left out; the forbidden-callable errors
# printed without the object addresses, which differ between runs).
import torch


@torch.compile
def foo(x):
    if torch.compiler.is_compiling():
        # torch.compile is active
        return x + 1
    else:
        # torch.compile is not active
        return x - 1


inp = torch.zeros(3)

print(foo(inp))  # compiled, prints 1


@torch.compiler.set_stance("force_eager")
def bar(x):
    # force disable the compiler
    return foo(x)


print(bar(inp))  # not compiled, prints -1

with torch.compiler.set_stance("force_eager"):
    print(foo(inp))  # not compiled, prints -1

torch.compiler.set_stance("force_eager")
print(foo(inp))  # not compiled, prints -1
torch.compiler.set_stance("default")

print(foo(inp))  # compiled, prints 1


def without_address(e):
    head, _, tail = str(e).partition(" at 0x")
    return head + " " + tail.partition(">")[2].splitlines()[0] if tail else head


@torch.compile
def baz(x):
    # error!
    with torch.compiler.set_stance("force_eager"):
        return x + 1


try:
    baz(inp)
except Exception as e:
    print(type(e).__name__, without_address(e))


@torch.compiler.set_stance("force_eager")
def inner(x):
    return x + 1


@torch.compile
def outer(x):
    # error!
    return inner(x)


try:
    outer(inp)
except Exception as e:
    print(type(e).__name__, without_address(e))
    print([line.replace(__file__, "<this file>") for line in str(e).splitlines()[3:5]])


@torch.compile
def my_big_model(x):
    return torch.relu(x)


# first compilation
my_big_model(torch.randn(3))

with torch.compiler.set_stance("fail_on_recompile"):
    my_big_model(torch.randn(3))  # no recompilation - OK
    try:
        my_big_model(torch.randn(4))  # recompilation - error
    except Exception as e:
        print(str(e).replace(__file__, "<this file>"))
    for bad in (torch.randn(3, dtype=torch.float64), torch.randn(3, 1), torch.randn(3, requires_grad=True)):
        try:
            my_big_model(bad)
        except RuntimeError as e:
            print(str(e).splitlines()[-1])


@torch.compile
def my_huge_model(x):
    if torch.compiler.is_compiling():
        return x + 1
    else:
        return x - 1


# first compilation
print(my_huge_model(torch.zeros(3)))  # 1

with torch.compiler.set_stance("eager_on_recompile"):
    print(my_huge_model(torch.zeros(3)))  # 1
    print(my_huge_model(torch.zeros(4)))  # -1
    print(my_huge_model(torch.zeros(3)))  # 1

# after a size changed once, PyTorch compiles that dimension as dynamic: later sizes reuse it
print(my_huge_model(torch.zeros(5)))
with torch.compiler.set_stance("fail_on_recompile"):
    print(my_huge_model(torch.zeros(7)))


@torch.compile
def my_gigantic_model(x, y):
    x = x @ y
    x = x @ y
    x = x @ y
    return x


inps = torch.ones(5, 5) / 5, torch.eye(5) * 2

with torch.compiler.set_stance("force_eager"):
    print("eager:", my_gigantic_model(*inps)[0])

# warmups
for _ in range(3):
    my_gigantic_model(*inps)

print("compiled:", my_gigantic_model(*inps)[0])


@torch.compile
def my_humongous_model(x):
    return torch.sin(x, x)


try:
    with torch.compiler.set_stance("force_eager"):
        print(my_humongous_model(torch.randn(3)))
    # this call to the compiled model won't run
    print(my_humongous_model(torch.randn(3)))
except Exception as e:
    print(e)

with torch.compiler.set_stance("eager_then_compile"):
    @torch.compile
    def twice(x):
        return x * (3 if torch.compiler.is_compiling() else 2)

    print(twice(torch.ones(2)), twice(torch.ones(2)))

try:
    torch.compiler.set_stance("force_eager", force_backend="eager")
except RuntimeError as e:
    print(e)
