"""Tabular classifier from a PyTorch bootcamp (silasplfilho/pytorch-tutorials,
Pytorch_Bootcamp/Section_7/51_Full_ANN_Classification.py, after Jose Portilla's course):
categorical columns through an nn.ModuleList of Embeddings, continuous ones through BatchNorm1d,
Linear/ReLU(inplace)/BatchNorm1d/Dropout blocks, sqrt of the cross-entropy as the training loss,
and the per-row report with format specs on 0-d tensors.  The NYC taxi CSV (and pandas) replaced
by numpy data of the same columns; the weights are drawn from numpy too, so the printed losses
do not depend on the library's random stream."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.RandomState(0)
N = 600
hour, ampm, wkdy = rng.randint(0, 24, N), rng.randint(0, 2, N), rng.randint(0, 7, N)
cats = torch.tensor(np.stack([hour, ampm, wkdy], axis=1), dtype=torch.int64)
dist_km = rng.gamma(2.0, 1.5, N)
conts = np.stack([rng.normal(0.0, 1.0, N), rng.normal(0.0, 1.0, N), rng.normal(0.0, 1.0, N),
                  rng.normal(0.0, 1.0, N), rng.randint(1, 6, N), dist_km], 1)
conts = torch.tensor(conts, dtype=torch.float)
y = torch.tensor((dist_km + 0.3 * rng.randn(N) > 3.0).astype(np.int64)[:, None]).flatten()
print(cats.dtype, cats.shape, conts.dtype, conts.shape, y.dtype, y.shape)

cat_szs = [24, 2, 7]
emb_szs = [(size, min(50, (size + 1) // 2)) for size in cat_szs]
print(emb_szs)


class TabularModel(nn.Module):
    def __init__(self, emb_szs, n_cont, out_sz, layers, p=0.5):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(ni, nf) for ni, nf in emb_szs])
        self.emb_drop = nn.Dropout(p)
        self.bn_cont = nn.BatchNorm1d(n_cont)

        layerlist = []
        n_emb = sum([nf for ni, nf in emb_szs])
        n_in = n_emb + n_cont
        for i in layers:
            layerlist.append(nn.Linear(n_in, i))
            layerlist.append(nn.ReLU(inplace=True))
            layerlist.append(nn.BatchNorm1d(i))
            layerlist.append(nn.Dropout(p))
            n_in = i
        layerlist.append(nn.Linear(layers[-1], out_sz))
        self.layers = nn.Sequential(*layerlist)

    def forward(self, x_cat, x_cont):
        embeddings = []
        for i, e in enumerate(self.embeds):
            embeddings.append(e(x_cat[:, i]))
        x = torch.cat(embeddings, 1)
        x = self.emb_drop(x)
        x_cont = self.bn_cont(x_cont)
        x = torch.cat([x, x_cont], 1)
        x = self.layers(x)
        return x


# Dropout off (p=0): with it the losses would follow the library's random stream.
model = TabularModel(emb_szs, conts.shape[1], 2, [64, 32], p=0.0)
print(model)
with torch.no_grad():
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            for param in module.parameters(recurse=False):
                param.copy_(torch.from_numpy(rng.normal(0.0, 0.2, tuple(param.shape))))
print(sum(p.numel() for p in model.parameters()), "parameters")

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

batch_size = N
test_size = int(batch_size * 0.2)
cat_train, cat_test = cats[:batch_size - test_size], cats[batch_size - test_size:batch_size]
con_train, con_test = conts[:batch_size - test_size], conts[batch_size - test_size:batch_size]
y_train, y_test = y[:batch_size - test_size], y[batch_size - test_size:batch_size]

epochs = 20
losses = []
for i in range(epochs):
    i += 1
    y_pred = model(cat_train, con_train)
    loss = torch.sqrt(criterion(y_pred, y_train))
    losses.append(loss)
    if i % 5 == 1:
        print(f'epoch: {i:3}  loss: {loss.item():10.6f}')
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f'epoch: {i:3}  loss: {loss.item():10.6f}')
print(type(losses[0]), losses[0].requires_grad, losses[-1].grad_fn.__class__.__name__)
print(model.bn_cont.num_batches_tracked, model.bn_cont.running_mean.shape)

model.eval()
with torch.no_grad():
    y_val = model(cat_test, con_test)
    loss = criterion(y_val, y_test)
print(f'CE Loss: {loss:.6f}')

rows = 12
correct = 0
print(f'{"MODEL OUTPUT":26} ARGMAX  Y_TEST')
for i in range(rows):
    print(f'{str(y_val[i]):26} {y_val[i].argmax():^7}{y_test[i]:^7}')
    if y_val[i].argmax().item() == y_test[i]:
        correct += 1
print(f'\n{correct} out of {rows} = {100 * correct / rows:.2f}% correct')
acc = (y_val.argmax(1) == y_test).float().mean()
print(f'test accuracy above 0.8: {acc.item() > 0.8}')
