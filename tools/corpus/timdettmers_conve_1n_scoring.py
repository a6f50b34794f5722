# ConvE: reshape embeddings to 2D, stack, conv2d, batchnorm, fc, 1-N sigmoid scoring
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(17)
num_entities, num_relations = 11, 3
emb_dim, emb_dim1 = 12, 3
emb_dim2 = emb_dim // emb_dim1


class ConvE(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb_e = nn.Embedding(num_entities, emb_dim, padding_idx=0)
        self.emb_rel = nn.Embedding(num_relations, emb_dim, padding_idx=0)
        self.inp_drop = nn.Dropout(0.2)
        self.hidden_drop = nn.Dropout(0.3)
        self.feature_map_drop = nn.Dropout2d(0.2)
        self.loss = nn.BCELoss()
        self.conv1 = nn.Conv2d(1, 4, (3, 3), 1, 0, bias=True)
        self.bn0 = nn.BatchNorm2d(1)
        self.bn1 = nn.BatchNorm2d(4)
        self.bn2 = nn.BatchNorm1d(emb_dim)
        self.register_parameter('b', nn.Parameter(torch.zeros(num_entities)))
        self.hidden_size = 4 * (2 * emb_dim1 - 2) * (emb_dim2 - 2)
        self.fc = nn.Linear(self.hidden_size, emb_dim)

    def forward(self, e1, rel):
        e1_embedded = self.emb_e(e1).view(-1, 1, emb_dim1, emb_dim2)
        rel_embedded = self.emb_rel(rel).view(-1, 1, emb_dim1, emb_dim2)
        stacked_inputs = torch.cat([e1_embedded, rel_embedded], 2)
        stacked_inputs = self.bn0(stacked_inputs)
        x = self.inp_drop(stacked_inputs)
        x = self.conv1(x)
        x = self.bn1(x)
        x = F.relu(x)
        x = self.feature_map_drop(x)
        x = x.view(x.shape[0], -1)
        x = self.fc(x)
        x = self.hidden_drop(x)
        x = self.bn2(x)
        x = F.relu(x)
        x = torch.mm(x, self.emb_e.weight.transpose(1, 0))
        x += self.b.expand_as(x)
        return torch.sigmoid(x)


model = ConvE()
with torch.no_grad():
    for name, p in model.named_parameters():
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + len(name)).view_as(p) * 0.3)
for name, p in model.named_parameters():
    print(name, tuple(p.shape))
print("hidden_size", model.hidden_size)
print(sum(p.numel() for p in model.parameters()))

e1 = torch.tensor([[1], [2], [3], [4], [5], [6]])
rel = torch.tensor([[1], [2], [1], [2], [1], [2]])
e2_multi = torch.zeros(6, num_entities).scatter_(1, (e1 + rel) % num_entities, 1.0)
e2_multi = ((1.0 - 0.1) * e2_multi) + (1.0 / e2_multi.size(1))
opt = torch.optim.Adam(model.parameters(), lr=0.003, weight_decay=0.0)

model.eval()  # dropout off so the loss is deterministic; batchnorm uses running stats
for i in range(3):
    opt.zero_grad()
    pred = model(e1, rel)
    loss = model.loss(pred, e2_multi)
    loss.backward()
    opt.step()
    print(f"step {i}: loss {loss.item():.6f}")

model.train()
for m in model.modules():
    if isinstance(m, (nn.Dropout, nn.Dropout2d)):
        m.p = 0.0  # keep the running statistics independent of the dropout masks
pred = model(e1, rel)
print(pred.shape, model.bn1.running_var.shape, model.bn0.num_batches_tracked.item())
x = torch.zeros(2, 4, 3, 3)
print(nn.Dropout2d(0.5).eval()(x + 1).sum().item())
with torch.no_grad():
    model.eval()
    pred = model(e1, rel)
    print(pred.argmax(dim=1))
    print(pred[0, :5])
