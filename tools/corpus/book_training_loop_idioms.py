"""Idioms of the book-style PyTorch introductions: torch.autograd.grad with retain_graph, a
custom Dataset with drop_last batching, a manual RNN step checked against nn.RNN's named weights,
accuracy as a tensor ratio formatted in f-strings, weight initialisation loops over modules(),
and ReduceLROnPlateau's removed `verbose` argument.  Weights are fixed, so printed values do not
depend on the random stream."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import grad
from torch.utils.data import DataLoader, Dataset, TensorDataset

# -- autograd.grad on a logistic-regression loss
y = torch.tensor([1.0])
x1 = torch.tensor([1.1])
w1 = torch.tensor([2.2], requires_grad=True)
b = torch.tensor([0.0], requires_grad=True)
z = x1 * w1 + b
a = torch.sigmoid(z)
loss = F.binary_cross_entropy(a, y)
grad_L_w1 = grad(loss, w1, retain_graph=True)
grad_L_b = grad(loss, b, retain_graph=True)
print(grad_L_w1, grad_L_b)
loss.backward()
print(w1.grad, b.grad)


# -- a toy Dataset, batched with drop_last
class ToyDataset(Dataset):
    def __init__(self, X, y):
        self.features = X
        self.labels = y

    def __getitem__(self, index):
        return self.features[index], self.labels[index]

    def __len__(self):
        return self.labels.shape[0]


X_train = torch.tensor([[-1.2, 3.1], [-0.9, 2.9], [-0.5, 2.6], [2.3, -1.1], [2.7, -1.5]])
y_train = torch.tensor([0, 0, 0, 1, 1])
train_ds = ToyDataset(X_train, y_train)
print(len(train_ds))
train_loader = DataLoader(dataset=train_ds, batch_size=2, shuffle=False, num_workers=0, drop_last=True)
for idx, (x, y) in enumerate(train_loader):
    print(f"Batch {idx+1}:", x, y)


class NeuralNetwork(torch.nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(num_inputs, 30), torch.nn.ReLU(),
            torch.nn.Linear(30, 20), torch.nn.ReLU(),
            torch.nn.Linear(20, num_outputs),
        )

    def forward(self, x):
        return self.layers(x)


model = NeuralNetwork(num_inputs=2, num_outputs=2)
for m in model.modules():
    if isinstance(m, nn.Linear):
        nn.init.constant_(m.bias, 0.01)
        with torch.no_grad():
            m.weight.copy_(torch.sin(torch.arange(m.weight.numel(), dtype=torch.float32)).view_as(m.weight) * 0.4)
num_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
print("Total number of trainable model parameters:", num_params)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
for epoch in range(3):
    model.train()
    for batch_idx, (features, labels) in enumerate(train_loader):
        logits = model(features)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"Epoch: {epoch+1:03d}/{3:03d}"
              f" | Batch {batch_idx:03d}/{len(train_loader):03d}"
              f" | Train Loss: {loss:.2f}")


def compute_accuracy(model, dataloader):
    model = model.eval()
    correct = 0.0
    total_examples = 0
    for idx, (features, labels) in enumerate(dataloader):
        with torch.no_grad():
            logits = model(features)
        predictions = torch.argmax(logits, dim=1)
        compare = labels == predictions
        correct += torch.sum(compare)
        total_examples += len(compare)
    return (correct / total_examples).item()


print(compute_accuracy(model, train_loader))
num_correct = torch.tensor(3)
print(f"Got {num_correct} / {5} with accuracy {float(num_correct)/float(5)*100:.2f}")
print(f"Accuracy: {num_correct / 5 * 100:.2f}")

# -- a manual RNN step against nn.RNN's weights
rnn_layer = nn.RNN(input_size=5, hidden_size=2, num_layers=1, batch_first=True)
with torch.no_grad():
    for i, (name, p) in enumerate(rnn_layer.named_parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).view_as(p) + 0.1 * i)
w_xh = rnn_layer.weight_ih_l0
w_hh = rnn_layer.weight_hh_l0
b_xh = rnn_layer.bias_ih_l0
b_hh = rnn_layer.bias_hh_l0
print('W_xh shape:', w_xh.shape)
print('W_hh shape:', w_hh.shape)
print('b_xh shape:', b_xh.shape)
x_seq = torch.tensor([[0.1] * 5, [0.2] * 5, [-0.3] * 5]).float()
output, hn = rnn_layer(torch.reshape(x_seq, (1, 3, 5)))
out_man = []
for t in range(3):
    xt = torch.reshape(x_seq[t], (1, 5))
    ht = torch.matmul(xt, torch.transpose(w_xh, 0, 1)) + b_xh
    if t > 0:
        prev_h = out_man[t - 1]
    else:
        prev_h = torch.zeros((ht.shape))
    ot = ht + torch.matmul(prev_h, torch.transpose(w_hh, 0, 1)) + b_hh
    ot = torch.tanh(ot)
    out_man.append(ot)
    print(f'Time step {t} =>')
    print('   Output (manual) :', ot.detach().numpy().round(4))
    print('   RNN output      :', output[:, t].detach().numpy().round(4))

ds = TensorDataset(torch.arange(6.0).view(3, 2), torch.tensor([0, 1, 0]))
print(ds[1], len(ds))

opt = torch.optim.Adam(model.parameters(), lr=0.1)
try:
    torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.1, patience=5, verbose=True)
except TypeError as e:
    print("TypeError:", e)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.1, patience=1)
for metric in [1.0, 1.0, 1.0, 1.0]:
    sched.step(metric)
print(opt.param_groups[0]['lr'], sched.get_last_lr())
