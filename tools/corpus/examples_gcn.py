"""pytorch/examples gcn: a two-layer graph convolutional network on a small random citation
graph, the symmetric normalised adjacency D^-1/2 (A + I) D^-1/2 built densely and as a sparse
COO tensor, masked training/validation nodes, Adam with weight decay, early stopping."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=False):
        super(GraphConv, self).__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super(GCN, self).__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def normalize_adjacency(adj):
    adj = adj + torch.eye(adj.shape[0])
    deg = adj.sum(1)
    d_inv_sqrt = torch.pow(deg, -0.5)
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.
    d_mat = torch.diag(d_inv_sqrt)
    return d_mat @ adj @ d_mat


adj = torch.tensor([[0., 1, 0], [1, 0, 1], [0, 1, 0]])
print(normalize_adjacency(adj))

torch.manual_seed(42)
n_nodes, n_feats, n_classes = 60, 16, 3
labels = torch.arange(n_nodes) % n_classes
features = F.one_hot(labels, n_classes).float().repeat(1, 6)[:, :n_feats] + 0.5 * torch.randn(n_nodes, n_feats)
same = labels.unsqueeze(0) == labels.unsqueeze(1)
coin = torch.rand(n_nodes, n_nodes)
adj = ((same & (coin < 0.2)) | (coin < 0.02)).float()
adj = torch.triu(adj, diagonal=1)
adj = adj + adj.t()
print(adj.shape, torch.equal(adj, adj.T), adj.diagonal().sum().item())
norm_adj = normalize_adjacency(adj)
edge_index = norm_adj.nonzero().t()
sparse_adj = torch.sparse_coo_tensor(edge_index, norm_adj[edge_index[0], edge_index[1]], (n_nodes, n_nodes))
print(sparse_adj.is_sparse, sparse_adj.layout, torch.allclose(sparse_adj.to_dense(), norm_adj))
idx_train, idx_val = torch.arange(0, 30), torch.arange(30, 60)

gcn = GCN(n_feats, 16, n_classes)
optimizer = Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
criterion = nn.NLLLoss()
best_val, patience = float('inf'), 0
for epoch in range(100):
    gcn.train()
    optimizer.zero_grad()
    output = gcn(features, sparse_adj)
    loss = criterion(output[idx_train], labels[idx_train])
    loss.backward()
    optimizer.step()
    gcn.eval()
    with torch.no_grad():
        output = gcn(features, sparse_adj)
        val_loss = criterion(output[idx_val], labels[idx_val]).item()
        val_acc = (output[idx_val].argmax(1) == labels[idx_val]).float().mean().item()
    if val_loss < best_val:
        best_val, patience = val_loss, 0
    else:
        patience += 1
        if patience > 10:
            break
print(output.shape, val_acc > 0.8)
print(gcn.gc1.kernel.shape, gcn.gc2.bias.shape, sum(p.numel() for p in gcn.parameters()))
