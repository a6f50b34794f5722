"""Turning per-sample label tensors into a batch, the Stack Overflow way: torch.tensor of a list of
tensors (fine for one-element ones, an error naming the fix for longer ones), then torch.stack /
torch.cat; and gathering scores by label with an advanced index, where a label past the number
of classes is the error every classification script meets once."""
import torch


def attempt(label, fn):
    try:
        out = fn()
    except Exception as e:
        print(f'{label}: {type(e).__name__}: {e}')
    else:
        print(f'{label}: {out}')


# one label per sample, each a 0-d or one-element tensor: torch.tensor reads each as a number
labels = [torch.tensor(2), torch.tensor([0]), torch.tensor(1)]
print(torch.tensor(labels), torch.tensor(labels).dtype)
scores = [torch.tensor(0.25), torch.tensor([0.5])]
print(torch.tensor(scores), torch.tensor(scores).dtype)

# a label sequence per sample: torch.tensor refuses, by the dtype it stores into
seqs = [torch.tensor([1, 2]), torch.tensor([3, 4])]
attempt('int sequences', lambda: torch.tensor(seqs))
attempt('int sequences as float', lambda: torch.tensor(seqs, dtype=torch.float32))
attempt('bool masks', lambda: torch.tensor([torch.tensor([True, False])]))
attempt('float rows', lambda: torch.tensor([torch.tensor([0.5, 1.5])]))
attempt('float rows as long', lambda: torch.tensor([torch.tensor([0.5, 1.5])], dtype=torch.long))
attempt('legacy LongTensor', lambda: torch.LongTensor(seqs))
attempt('legacy FloatTensor', lambda: torch.FloatTensor(seqs))
attempt('as_tensor', lambda: torch.as_tensor(seqs))
attempt('new_tensor', lambda: torch.zeros(1, dtype=torch.long).new_tensor(seqs))
# ... and the fixes
print(torch.stack(seqs), torch.cat(seqs), torch.stack(seqs).float().mean(0))

# scores of each sample's true class
logits = torch.arange(12.).reshape(4, 3)
y = torch.tensor([2, 0, 1, 1])
print(logits[torch.arange(4), y], logits.gather(1, y[:, None]).squeeze(1))
bad = torch.tensor([2, 0, 3, 1])            # class 3 of 3
attempt('label past the classes', lambda: logits[:, bad])
attempt('label past, paired rows', lambda: logits[torch.arange(4), bad])
attempt('negative label', lambda: logits[:, torch.tensor([-4])])
attempt('batch of sequences', lambda: logits.view(2, 2, 3)[:, :, [5]])
attempt('after an ellipsis', lambda: logits.view(2, 2, 3)[..., [0, 3]])
attempt('mask then label', lambda: logits[torch.tensor([True, False, True, True]), [0, 1, 9]])
attempt('gather past', lambda: logits.gather(1, bad[:, None]))


def zero_label(t, labels):
    t[:, labels] = 0
    return t


attempt('write past', lambda: zero_label(logits.clone(), bad))
print(zero_label(logits.clone(), y[:2]))
