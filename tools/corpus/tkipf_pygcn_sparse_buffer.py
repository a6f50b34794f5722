import math
import io
import numpy as np
import scipy.sparse as sp
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parameter import Parameter

def encode_onehot(labels):
    classes = sorted(set(labels))
    classes_dict = {c: np.identity(len(classes))[i, :] for i, c in enumerate(classes)}
    return np.array(list(map(classes_dict.get, labels)), dtype=np.int32)

def normalize(mx):
    rowsum = np.array(mx.sum(1))
    r_inv = np.power(rowsum, -1).flatten()
    r_inv[np.isinf(r_inv)] = 0.
    return sp.diags(r_inv).dot(mx)

def sparse_mx_to_torch_sparse_tensor(sparse_mx):
    sparse_mx = sparse_mx.tocoo().astype(np.float32)
    indices = torch.from_numpy(np.vstack((sparse_mx.row, sparse_mx.col)).astype(np.int64))
    values = torch.from_numpy(sparse_mx.data)
    shape = torch.Size(sparse_mx.shape)
    return torch.sparse_coo_tensor(indices, values, shape)

def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    return correct.sum() / len(labels)

# two communities of 6 nodes
N = 12
rows, cols = [], []
for block in (range(0, 6), range(6, 12)):
    for i in block:
        for j in block:
            if i < j and (i + j) % 3 != 0:
                rows.append(i); cols.append(j)
rows.append(5); cols.append(6)
edges = np.array([rows, cols])
adj = sp.coo_matrix((np.ones(edges.shape[1]), (edges[0], edges[1])), shape=(N, N), dtype=np.float32)
adj = adj + adj.T.multiply(adj.T > adj) - adj.multiply(adj.T > adj)
adj = normalize(adj + sp.eye(adj.shape[0]))
labels_raw = ["a"] * 6 + ["b"] * 6
labels = torch.LongTensor(np.where(encode_onehot(labels_raw))[1])
features = torch.FloatTensor(np.eye(N, dtype=np.float32)[:, :8])
features = F.normalize(features + 0.1, p=1, dim=1)
adj = sparse_mx_to_torch_sparse_tensor(adj)
print(adj.shape, adj._nnz(), adj.dtype, adj.is_sparse)
print("row sums", torch.sparse.sum(adj, dim=1).to_dense())

class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        with torch.no_grad():
            self.weight.copy_(torch.linspace(-stdv, stdv, self.weight.numel()).reshape(self.weight.shape))
            if self.bias is not None:
                self.bias.fill_(0.0)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        if self.bias is not None:
            return output + self.bias
        return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + str(self.out_features) + ')'

class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout, adj):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout
        self.register_buffer("adj", adj)

    def forward(self, x):
        x = F.relu(self.gc1(x, self.adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, self.adj)
        return F.log_softmax(x, dim=1)

model = GCN(nfeat=features.shape[1], nhid=16, nclass=int(labels.max()) + 1, dropout=0.0, adj=adj)
print(model)
print([name for name, _ in model.named_buffers()], list(model.state_dict().keys()))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
idx_train = torch.LongTensor([0, 1, 6, 7])
idx_test = torch.LongTensor(range(2, 6))
for epoch in range(60):
    model.train()
    optimizer.zero_grad()
    output = model(features)
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    acc_train = accuracy(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()
    if epoch % 20 == 0:
        print('Epoch: {:04d}'.format(epoch + 1), 'loss_train: {:.4f}'.format(loss_train.item()),
              'acc_train: {:.4f}'.format(acc_train.item()))
model.eval()
output = model(features)
print("test acc", accuracy(output, labels).item())
print(output.argmax(1))
# checkpoint round trip with the sparse buffer
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
buf.seek(0)
model2 = GCN(features.shape[1], 16, 2, 0.0, torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (N, N)))
print(model2.load_state_dict(torch.load(buf)))
print(torch.allclose(model2(features), output))
print(model2.adj._nnz() == adj._nnz())
model2.double()
print(model2.adj.dtype, model2(features.double()).dtype)
