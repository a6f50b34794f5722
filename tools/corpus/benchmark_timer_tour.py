"""torch.utils.benchmark as the intermediate tutorials use it: Timers over statements with
globals, timeit / blocked_autorange, Measurement fields, and the task summary a Measurement
prints (times vary run to run, so only their structure is printed)."""
import torch
import torch.nn.functional as F
import torch.utils.benchmark as benchmark


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


D = 8
weight = torch.linspace(-1, 1, D * D).reshape(D, D)
bias = torch.linspace(0, 0.5, D)
x = torch.linspace(-0.3, 0.3, D)
unit_vectors = torch.eye(D)


def compute_jac(xp):
    rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0] for vec in unit_vectors]
    return torch.stack(rows)


xp = x.clone().requires_grad_()
jacobian = compute_jac(xp)
print(jacobian.shape, jacobian[0])

t0 = benchmark.Timer(stmt="compute_jac(xp)", globals=globals())
t1 = benchmark.Timer(stmt="predict(weight, bias, x)", globals={"predict": predict, "weight": weight,
                                                                "bias": bias, "x": x},
                     label="predict", sub_label="D=8", description="linear + tanh")
m0 = t0.timeit(5)
m1 = t1.blocked_autorange(min_run_time=0.05)
for m in (m0, m1):
    lines = str(m).splitlines()     # address, task summary, time, block count (timing-dependent)
    print(lines[1:3] if m is m1 else lines[1:2], any(line.endswith("1 thread") for line in lines))
    print(m.title, m.number_per_run > 0, len(m.times) == len(m.raw_times), m.median > 0, m.mean > 0)


def get_perf(first, first_descriptor, second, second_descriptor):
    faster = second.times[0]
    slower = first.times[0]
    gain = (slower - faster) / slower
    if gain < 0:
        gain *= -1
    return gain * 100 >= 0


print(get_perf(m0, "without vmap", m1, "predict"))
m2 = benchmark.Timer(stmt="""
    y = x * 2
    y.sum()
""", globals={"x": x}).timeit(3)
print(m2.title)
print(m2.stmt.splitlines(), m2.number_per_run, m2.num_threads)
