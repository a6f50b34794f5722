"""Lookahead (alphadl/lookahead.pytorch, lonePatient) wrapping RAdam / NAdam / SGD: an Optimizer
subclass that never calls Optimizer.__init__, its slow weights and state_dict round trip, the
AttributeError PyTorch raises once Optimizer.zero_grad has wrapped the class's step, and the
plain-object form around AdamW(amsgrad=True)."""
from collections import defaultdict
import torch
from torch.optim.optimizer import Optimizer


class Lookahead(Optimizer):
    def __init__(self, optimizer, k=5, alpha=0.5):
        self.optimizer = optimizer
        self.k = k
        self.alpha = alpha
        self.param_groups = self.optimizer.param_groups
        self.state = defaultdict(dict)
        self.fast_state = self.optimizer.state
        for group in self.param_groups:
            group["counter"] = 0
        self.defaults = self.optimizer.defaults

    def update(self, group):
        for fast in group["params"]:
            param_state = self.state[fast]
            if "slow_param" not in param_state:
                param_state["slow_param"] = torch.zeros_like(fast.data)
                param_state["slow_param"].copy_(fast.data)
            slow = param_state["slow_param"]
            slow += (fast.data - slow) * self.alpha
            fast.data.copy_(slow)

    def update_lookahead(self):
        for group in self.param_groups:
            self.update(group)

    def step(self, closure=None):
        loss = self.optimizer.step(closure)
        for group in self.param_groups:
            if group["counter"] == 0:
                self.update(group)
            group["counter"] += 1
            if group["counter"] >= self.k:
                group["counter"] = 0
        return loss

    def state_dict(self):
        fast_state_dict = self.optimizer.state_dict()
        slow_state = {(id(k) if isinstance(k, torch.Tensor) else k): v for k, v in self.state.items()}
        fast_state = fast_state_dict["state"]
        param_groups = fast_state_dict["param_groups"]
        return {"fast_state": fast_state, "slow_state": slow_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        slow_state_dict = {"state": state_dict["slow_state"], "param_groups": state_dict["param_groups"]}
        fast_state_dict = {"state": state_dict["fast_state"], "param_groups": state_dict["param_groups"]}
        super(Lookahead, self).load_state_dict(slow_state_dict)
        self.optimizer.load_state_dict(fast_state_dict)
        self.fast_state = self.optimizer.state

    def add_param_group(self, param_group):
        param_group["counter"] = 0
        self.optimizer.add_param_group(param_group)


class LookaheadSimple:
    """The other common form: not an Optimizer subclass at all."""
    def __init__(self, base, k=5, alpha=0.5):
        self.base, self.k, self.alpha, self.steps = base, k, alpha, 0
        self.slow = [[p.clone().detach() for p in g["params"]] for g in base.param_groups]

    @torch.no_grad()
    def step(self):
        self.base.step()
        self.steps += 1
        if self.steps % self.k == 0:
            for group, slows in zip(self.base.param_groups, self.slow):
                for p, q in zip(group["params"], slows):
                    q.add_(p - q, alpha=self.alpha)
                    p.copy_(q)

    def zero_grad(self, set_to_none=True):
        self.base.zero_grad(set_to_none=set_to_none)


def make():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ELU(), torch.nn.Linear(6, 3))
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel()).float() * 0.8 + 2 * i).view(p.shape) * 0.5)
    return m


x = torch.linspace(-1.5, 1.5, 32).view(8, 4)
y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
for base_name in ("RAdam", "NAdam", "SGD"):
    model = make()
    base_cls = getattr(torch.optim, base_name)
    kwargs = dict(lr=0.05) if base_name != "SGD" else dict(lr=0.1, momentum=0.9, nesterov=True)
    base = base_cls(model.parameters(), **kwargs)
    opt = Lookahead(base, k=3, alpha=0.5)
    losses = []
    for step in range(10):
        model.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(round(loss.item(), 5))
    print(base_name, losses[::3])
    print("counter", opt.param_groups[0]["counter"], "slow keys", list(opt.state[model[0].weight].keys()))
    print(model[2].bias)

sd = opt.state_dict()
print(sorted(sd.keys()), len(sd["fast_state"]), len(sd["slow_state"]))
print(sd["param_groups"][0]["counter"], sd["param_groups"][0]["nesterov"])
model2 = make()
opt2 = Lookahead(torch.optim.SGD(model2.parameters(), lr=0.1, momentum=0.9, nesterov=True), k=3)
try:
    opt2.load_state_dict(sd)
    print("loaded", len(opt2.state))
except Exception as e:
    print(type(e).__name__, str(e)[:60])
print(opt)
# Optimizer.zero_grad on the wrapper makes PyTorch wrap Lookahead.step with its hook runner,
# which reads hook tables that Optimizer.__init__ would have made
opt2.zero_grad()
print('_zero_grad_profile_name' in vars(opt2))
try:
    opt2.step()
except AttributeError as e:
    print("AttributeError:", str(e).split(".")[0])
opt3 = Lookahead(torch.optim.SGD(model2.parameters(), lr=0.1))
try:
    opt3.step()
except AttributeError as e:
    print("AttributeError (another instance):", str(e).split(".")[0])
print(repr(opt2.optimizer).splitlines()[0])

model = make()
la = LookaheadSimple(torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.05, amsgrad=True), k=4, alpha=0.8)
for step in range(12):
    la.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)
    loss.backward()
    la.step()
print(f"simple lookahead loss {loss.item():.5f}")
print(la.slow[0][1])
print(sorted(la.base.state[model[0].bias].keys()))
print(la.base.state[model[0].bias]["max_exp_avg_sq"].shape, la.base.state[model[0].bias]["step"])
