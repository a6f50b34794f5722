"""pytorch/examples gat: a multi-head graph attention layer (linear projection per head, attention
logits from source and target halves, LeakyReLU, masking non-edges with -inf, softmax, dropout,
heads concatenated or averaged), trained on a small random graph."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features: int, out_features: int, n_heads: int, concat: bool = False,
                 dropout: float = 0.4, leaky_relu_slope: float = 0.2):
        super(GraphAttentionLayer, self).__init__()
        self.n_heads = n_heads
        self.concat = concat
        self.dropout = dropout
        if concat:
            self.out_features = out_features
            assert out_features % n_heads == 0
            self.n_hidden = out_features // n_heads
        else:
            self.n_hidden = out_features
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))
        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
        self.softmax = nn.Softmax(dim=1)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def _get_attention_scores(self, h_transformed: torch.Tensor):
        source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :])
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :])
        e = source_scores + target_scores.mT
        return self.leakyrelu(e)

    def forward(self, h: torch.Tensor, adj_mat: torch.Tensor):
        n_nodes = h.shape[0]
        h_transformed = torch.mm(h, self.W)
        h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
        e = self._get_attention_scores(h_transformed)
        connectivity_mask = -9e16 * torch.ones_like(e)
        e = torch.where(adj_mat > 0, e, connectivity_mask)
        attention = F.softmax(e, dim=-1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = torch.matmul(attention, h_transformed)
        if self.concat:
            h_prime = h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
        else:
            h_prime = h_prime.mean(dim=0)
        return h_prime


class GAT(nn.Module):
    def __init__(self, in_features, n_hidden, n_heads, num_classes, concat=False, dropout=0.4,
                 leaky_relu_slope=0.2):
        super(GAT, self).__init__()
        self.gat1 = GraphAttentionLayer(in_features=in_features, out_features=n_hidden, n_heads=n_heads,
                                        concat=concat, dropout=dropout, leaky_relu_slope=leaky_relu_slope)
        self.gat2 = GraphAttentionLayer(in_features=n_hidden, out_features=num_classes, n_heads=1,
                                        concat=False, dropout=dropout, leaky_relu_slope=leaky_relu_slope)

    def forward(self, input_tensor: torch.Tensor, adj_mat: torch.Tensor):
        x = self.gat1(input_tensor, adj_mat)
        x = F.elu(x)
        x = self.gat2(x, adj_mat)
        return F.log_softmax(x, dim=1)


torch.manual_seed(13)
n, f, c = 40, 8, 2
labels = torch.arange(n) % c
features = torch.randn(n, f) + 1.5 * F.one_hot(labels, f).float()
adj = (torch.rand(n, n) < 0.15) | (labels[:, None] == labels[None, :]) & (torch.rand(n, n) < 0.3)
adj = (adj | adj.T | torch.eye(n, dtype=torch.bool)).long()
print(adj.dtype, adj.shape, bool((adj.diagonal() == 1).all()))

layer = GraphAttentionLayer(f, 8, n_heads=4, concat=True)
print(layer.W.shape, layer.a.shape, layer(features, adj).shape)
layer.eval()
att_in = layer.W.new_ones(3, 1, 2)
print(att_in.shape, att_in.dtype, att_in.mT.shape)

gat = GAT(f, 16, 4, c, concat=True, dropout=0.3)
optimizer = torch.optim.Adam(gat.parameters(), lr=0.005, weight_decay=5e-4)
criterion = nn.NLLLoss()
train_mask = torch.zeros(n, dtype=torch.bool)
train_mask[:20] = True
first = None
for epoch in range(60):
    gat.train()
    optimizer.zero_grad()
    out = gat(features, adj)
    loss = criterion(out[train_mask], labels[train_mask])
    loss.backward()
    optimizer.step()
    first = loss.item() if first is None else first
gat.eval()
with torch.no_grad():
    out = gat(features, adj)
    acc = (out[~train_mask].argmax(dim=1) == labels[~train_mask]).sum().item() / (~train_mask).sum().item()
print(loss.item() < first, acc > 0.7, out.shape)
print(F.softmax(torch.where(torch.tensor([[1, 0], [1, 1]]) > 0, torch.tensor([[0.5, 2.0], [1.0, 1.0]]),
                            torch.tensor(-9e16)), dim=-1))
