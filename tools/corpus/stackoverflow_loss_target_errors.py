"""Stack Overflow / forum threads on classification losses: "expected scalar type Long but found
Float", "Target size must be the same as input size" with BCEWithLogitsLoss, "Expected input
batch_size (32) to match target batch_size (16)", target out of range and ignore_index, double
softmax before CrossEntropyLoss, NLLLoss on raw logits, and the sequence-model permute."""
import torch
import warnings
import torch.nn as nn
import torch.nn.functional as F

criterion = nn.CrossEntropyLoss()
logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
target_float = torch.tensor([0.0, 2.0])
target_long = torch.tensor([0, 2])
print(target_float.dtype, target_long.dtype)

for name, t in [("float", target_float), ("long", target_long), ("int32", target_long.int()),
                ("float.long()", target_float.long()), ("onehot float", torch.tensor([[1.0, 0, 0], [0, 0, 1.0]]))]:
    try:
        print(name, criterion(logits, t))
    except Exception as e:
        print(name, type(e).__name__ + ":", e)

# target out of range
try:
    criterion(logits, torch.tensor([0, 3]))
except Exception as e:
    print(type(e).__name__ + ":", e)
# -100 is ignored
print(criterion(logits, torch.tensor([0, -100])))
try:
    criterion(logits, torch.tensor([0, -1]))
except Exception as e:
    print(type(e).__name__ + ":", e)
# batch mismatch
try:
    criterion(logits, torch.tensor([0, 1, 2]))
except Exception as e:
    print(type(e).__name__ + ":", e)
# target with extra dim [N, 1]
try:
    criterion(logits, target_long.unsqueeze(1))
except Exception as e:
    print(type(e).__name__ + ":", e)
print(criterion(logits, target_long.unsqueeze(1).squeeze(1)))
print(criterion(logits, target_long.view(-1)))

# softmax before CrossEntropyLoss (double softmax)
probs = torch.softmax(logits, dim=1)
print("double softmax:", criterion(probs, target_long).item(), "correct:", criterion(logits, target_long).item())

# NLLLoss needs log-probs
nll = nn.NLLLoss()
print(nll(torch.log_softmax(logits, 1), target_long))
print(nll(logits, target_long))
try:
    nll(torch.log_softmax(logits, 1), target_float)
except Exception as e:
    print(type(e).__name__ + ":", e)

# 1-D logits for a single sample
print(criterion(logits[0], target_long[0]))
try:
    criterion(logits[0], target_long[:1])
except Exception as e:
    print(type(e).__name__ + ":", e)

# reduction
print(nn.CrossEntropyLoss(reduction="none")(logits, target_long))
print(nn.CrossEntropyLoss(reduction="sum")(logits, target_long))
print(nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))(logits, target_long))
print(nn.CrossEntropyLoss(label_smoothing=0.1)(logits, target_long))


# --- BCE threads
logits = torch.linspace(-2, 2, 8).unsqueeze(1)
labels = torch.tensor([0, 0, 1, 0, 1, 1, 1, 0])
crit = nn.BCEWithLogitsLoss()
try:
    crit(logits, labels)
except Exception as e:
    print(type(e).__name__ + ":", e)
try:
    crit(logits, labels.float())
except Exception as e:
    print(type(e).__name__ + ":", e)
print(crit(logits.squeeze(1), labels.float()))
print(crit(logits, labels.float().unsqueeze(1)))
print(crit(logits.view(-1), labels.float()))
try:
    print(crit(logits.squeeze(1), labels))
except Exception as e:
    print(type(e).__name__ + ":", e)

bce = nn.BCELoss()
probs = torch.sigmoid(logits).squeeze()
print(bce(probs, labels.float()))
try:
    bce(probs, labels.float().unsqueeze(1))
except Exception as e:
    print(type(e).__name__ + ":", e)
try:
    bce(logits.squeeze(), labels.float())
except Exception as e:
    print(type(e).__name__ + ":", e)
try:
    bce(probs, labels)
except Exception as e:
    print(type(e).__name__ + ":", e)

# pos_weight for imbalance
print(nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))(logits.squeeze(), labels.float()))
# MSE broadcasting warning: shapes (8,1) vs (8,)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    mse = nn.MSELoss()(logits, labels.float())
    print("mse broadcast:", mse, len(w) > 0, "broadcast" in str(w[0].message) if w else None)
print(nn.MSELoss()(logits.squeeze(), labels.float()))
try:
    nn.MSELoss()(logits, labels)
except Exception as e:
    print(type(e).__name__ + ":", e)
try:
    nn.L1Loss()(torch.ones(3), torch.ones(4))
except Exception as e:
    print(type(e).__name__ + ":", e)

# --- batch size threads
criterion = nn.CrossEntropyLoss()
out = torch.zeros(32, 10)
target = torch.zeros(16, dtype=torch.long)
try:
    criterion(out, target)
except ValueError as e:
    print(type(e).__name__ + ":", e)

# the usual cause: view(-1, wrong) in forward
x = torch.ones(16, 16, 5, 5)
flat_bad = x.view(-1, 16 * 5 * 5 // 2)
print(flat_bad.shape)
try:
    F.cross_entropy(nn.Linear(200, 10)(flat_bad), target)
except ValueError as e:
    print(e)
flat_ok = x.view(x.size(0), -1)
print(flat_ok.shape)
print(F.cross_entropy(torch.zeros(16, 10), target))

# sequence models: (N, T, C) logits need permuting
logits = torch.zeros(4, 7, 10)
tgt = torch.zeros(4, 7, dtype=torch.long)
try:
    F.cross_entropy(logits, tgt)
except Exception as e:
    print(type(e).__name__ + ":", e)
print(F.cross_entropy(logits.permute(0, 2, 1), tgt))
print(F.cross_entropy(logits.view(-1, 10), tgt.view(-1)))
try:
    F.nll_loss(torch.zeros(3, 5), torch.zeros(4, dtype=torch.long))
except ValueError as e:
    print(e)
try:
    F.cross_entropy(torch.zeros(3, 5, 2), torch.zeros(3, 3, dtype=torch.long))
except RuntimeError as e:
    print(type(e).__name__ + ":", e)
try:
    F.mse_loss(torch.zeros(3, 2), torch.zeros(4, 2))
except RuntimeError as e:
    print(type(e).__name__ + ":", e)
try:
    torch.ones(3) + torch.ones(4)
except RuntimeError as e:
    print(type(e).__name__ + ":", e)
try:
    torch.cat([torch.ones(2, 3), torch.ones(2, 4)])
except RuntimeError as e:
    print(type(e).__name__ + ":", e)
try:
    torch.stack([torch.ones(2, 3), torch.ones(3, 3)])
except RuntimeError as e:
    print(type(e).__name__ + ":", e)
