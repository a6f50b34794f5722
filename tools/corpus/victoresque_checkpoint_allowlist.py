"""Inspired by victoresque/pytorch-template's BaseTrainer: a train/validation split by index
samplers, a monitor-and-early-stop loop that checkpoints a dict of model/optimizer/scheduler
state plus a config object, and a resume (whose optimizers share the loaded moments, as
PyTorch's load_state_dict keeps them).  Exercises what a weights-only torch.load accepts
(dicts, lists, sets, layouts, Counters) and refuses (frozenset, a config dict subclass even when
allowlisted, an unlisted class), safe_globals / weights_only=False, a resumed run continuing
exactly, and deterministic mode's fill of uninitialised memory."""
import collections
import io
import pickle

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Sampler, TensorDataset


class IndexSampler(Sampler):
    """The split's indices in a fixed order (the template shuffles them; order kept here)."""

    def __init__(self, indices):
        self.indices = list(indices)

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)


class Config(dict):
    """A dict-like run configuration, saved inside the checkpoint."""


def save_load(obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **kw)


def try_load(label, obj, **kw):
    try:
        out = save_load(obj, **kw)
        print(label, "loaded", type(out).__name__)
        return out
    except pickle.UnpicklingError as e:
        text = str(e)
        key = next(line for line in text.splitlines() if "Unsupported global" in line
                   or "Can only" in line)
        print(label, "UnpicklingError:", key.split("error: ")[-1][:70])


def make_model():
    model = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 4))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * (i + 1.3))
                    .reshape(p.shape) * 0.5)
    return model


X = torch.stack([torch.linspace(-1, 1, 48), torch.sin(torch.arange(48.0)),
                 torch.linspace(1, -2, 48) ** 2], dim=1)
y = ((X[:, 0] > 0).long() * 2 + (X[:, 1] > 0).long())
ds = TensorDataset(X, y)
valid_idx = list(range(0, 48, 4))
train_idx = [i for i in range(48) if i % 4]
train = DataLoader(ds, batch_size=8, sampler=IndexSampler(train_idx))
valid = DataLoader(ds, batch_size=6, sampler=IndexSampler(valid_idx))
print(len(train), len(valid), len(train.sampler), train.batch_size)


def run_epochs(model, opt, sched, epochs, start=1, mnt_best=float("inf"), patience=2):
    not_improved, best_state = 0, None
    for epoch in range(start, start + epochs):
        model.train()
        total = 0.0
        for data, target in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(data), target)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
            opt.step()
            total += loss.item()
        sched.step()
        model.eval()
        with torch.no_grad():
            out = torch.cat([model(d) for d, _ in valid])
            tgt = torch.cat([t for _, t in valid])
            val_loss = F.cross_entropy(out, tgt).item()
            acc = (out.argmax(1) == tgt).float().mean()
        improved = val_loss <= mnt_best
        if improved:
            mnt_best, not_improved = val_loss, 0
            best_state = {"epoch": epoch, "state_dict": model.state_dict(),
                          "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                          "monitor_best": mnt_best}
        else:
            not_improved += 1
        print(f"epoch {epoch}: loss {total / len(train):.4f} val {val_loss:.4f} "
              f"acc {acc:.3f} norm {norm:.3f} lr {sched.get_last_lr()[0]:.4f} "
              f"{'*' if improved else ''}")
        if not_improved > patience:
            print("early stop at", epoch)
            break
    return best_state


model = make_model()
opt = torch.optim.Adam(model.parameters(), lr=0.05, amsgrad=True)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
best = run_epochs(model, opt, sched, 4)
print("best epoch", best["epoch"], sorted(best))

# checkpoints PyTorch's weights-only load accepts, and ones it refuses
state = dict(best, config=Config(arch="mlp", lr=0.05))
try_load("with config", state)
with torch.serialization.safe_globals([Config]):
    try_load("config allowlisted", state)
ckpt = try_load("weights_only=False", state, weights_only=False)
print(type(ckpt["config"]).__name__, ckpt["config"]["arch"], ckpt["epoch"])
try_load("set and layout", {"classes": {0, 1, 2}, "layout": torch.strided,
                           "counts": collections.Counter([1, 1, 3])})
try_load("frozenset", {"frozen": frozenset([1])})
with torch.serialization.safe_globals([frozenset]):
    try_load("frozenset allowlisted", {"frozen": frozenset([1])})
try_load("range", {"r": range(3)})
try_load("defaultdict", {"d": collections.defaultdict(list)})

# resume from the weights-only part and continue: both runs must agree exactly
plain = save_load({k: v for k, v in state.items() if k != "config"})
resumed = make_model()
resumed.load_state_dict(plain["state_dict"])
opt2 = torch.optim.Adam(resumed.parameters(), lr=1.0, amsgrad=True)
opt2.load_state_dict(plain["optimizer"])
sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
sched2.load_state_dict(plain["scheduler"])
print("resumed lr", opt2.param_groups[0]["lr"], sorted(opt2.state[resumed[0].weight]))
twin = make_model()
twin.load_state_dict(plain["state_dict"])
opt3 = torch.optim.Adam(twin.parameters(), lr=1.0, amsgrad=True)
opt3.load_state_dict(plain["optimizer"])
sched3 = torch.optim.lr_scheduler.StepLR(opt3, step_size=2, gamma=0.5)
sched3.load_state_dict(plain["scheduler"])
# (load_state_dict keeps the loaded state tensors as they are: both optimizers share them, so
# the second run starts from moments the first one has already advanced)
print("shared moments", opt2.state[resumed[0].weight]["exp_avg"].data_ptr()
      == opt3.state[twin[0].weight]["exp_avg"].data_ptr(),
      resumed[0].weight.data_ptr() == twin[0].weight.data_ptr())
run_epochs(resumed, opt2, sched2, 2, start=plain["epoch"] + 1, mnt_best=plain["monitor_best"])
run_epochs(twin, opt3, sched3, 2, start=plain["epoch"] + 1, mnt_best=plain["monitor_best"])
print("same continuation", all(torch.equal(a, b) for a, b in
                               zip(resumed.parameters(), twin.parameters())))

# deterministic mode: uninitialised memory is filled with a known value
torch.use_deterministic_algorithms(True)
print(torch.are_deterministic_algorithms_enabled(),
      torch.utils.deterministic.fill_uninitialized_memory)
print(torch.empty(3), torch.empty(2, dtype=torch.int32), torch.zeros(2).new_empty(2))
grown = torch.ones(2)
grown.resize_(4)
print(grown, torch.empty_like(torch.ones(2, 2).t()))
torch.utils.deterministic.fill_uninitialized_memory = False
print(torch.empty(2).shape)
torch.utils.deterministic.fill_uninitialized_memory = True
torch.use_deterministic_algorithms(False)
print(torch.are_deterministic_algorithms_enabled())
