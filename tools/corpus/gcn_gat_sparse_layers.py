"""tkipf/pygcn and Diego999/pyGAT: the GCN (GraphConvolution with torch.spmm on a legacy
torch.sparse.FloatTensor adjacency) and the sparse GAT layer (a custom autograd Function whose
forward builds a sparse_coo_tensor, saves it, and whose backward reads a._indices()), layers and
models verbatim, on a small numpy-made graph with numpy starting weights; utils' row
normalisation redone in numpy (no scipy)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parameter import Parameter
from torch.nn.modules.module import Module


class GraphConvolution(Module):
    """
    Simple GCN layer, similar to https://arxiv.org/abs/1609.02907
    """

    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
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
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        if self.bias is not None:
            return output + self.bias
        else:
            return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' \
               + str(self.in_features) + ' -> ' \
               + str(self.out_features) + ')'


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()

        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


class SpecialSpmmFunction(torch.autograd.Function):
    """Special function for only sparse region backpropataion layer."""
    @staticmethod
    def forward(ctx, indices, values, shape, b):
        assert indices.requires_grad == False
        a = torch.sparse_coo_tensor(indices, values, shape)
        ctx.save_for_backward(a, b)
        ctx.N = shape[0]
        return torch.matmul(a, b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_values = grad_b = None
        if ctx.needs_input_grad[1]:
            grad_a_dense = grad_output.matmul(b.t())
            edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
            grad_values = grad_a_dense.view(-1)[edge_idx]
        if ctx.needs_input_grad[3]:
            grad_b = a.t().matmul(grad_output)
        return None, grad_values, None, grad_b


class SpecialSpmm(nn.Module):
    def forward(self, indices, values, shape, b):
        return SpecialSpmmFunction.apply(indices, values, shape, b)


class SpGraphAttentionLayer(nn.Module):
    """
    Sparse version GAT layer, similar to https://arxiv.org/abs/1710.10903
    """

    def __init__(self, in_features, out_features, dropout, alpha, concat=True):
        super(SpGraphAttentionLayer, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.alpha = alpha
        self.concat = concat

        self.W = nn.Parameter(torch.zeros(size=(in_features, out_features)))
        nn.init.xavier_normal_(self.W.data, gain=1.414)

        self.a = nn.Parameter(torch.zeros(size=(1, 2*out_features)))
        nn.init.xavier_normal_(self.a.data, gain=1.414)

        self.dropout = nn.Dropout(dropout)
        self.leakyrelu = nn.LeakyReLU(self.alpha)
        self.special_spmm = SpecialSpmm()

    def forward(self, input, adj):
        dv = 'cuda' if input.is_cuda else 'cpu'

        N = input.size()[0]
        edge = adj.nonzero().t()

        h = torch.mm(input, self.W)
        # h: N x out
        assert not torch.isnan(h).any()

        # Self-attention on the nodes - Shared attention mechanism
        edge_h = torch.cat((h[edge[0, :], :], h[edge[1, :], :]), dim=1).t()
        # edge: 2*D x E

        edge_e = torch.exp(-self.leakyrelu(self.a.mm(edge_h).squeeze()))
        assert not torch.isnan(edge_e).any()
        # edge_e: E

        e_rowsum = self.special_spmm(edge, edge_e, torch.Size([N, N]), torch.ones(size=(N,1), device=dv))
        # e_rowsum: N x 1

        edge_e = self.dropout(edge_e)
        # edge_e: E

        h_prime = self.special_spmm(edge, edge_e, torch.Size([N, N]), h)
        assert not torch.isnan(h_prime).any()
        # h_prime: N x out

        h_prime = h_prime.div(e_rowsum)
        # h_prime: N x out
        assert not torch.isnan(h_prime).any()

        if self.concat:
            # if this layer is not last layer,
            return F.elu(h_prime)
        else:
            # if this layer is last layer,
            return h_prime

    def __repr__(self):
        return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + str(self.out_features) + ')'


class SpGAT(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
        """Sparse version of GAT."""
        super(SpGAT, self).__init__()
        self.dropout = dropout

        self.attentions = [SpGraphAttentionLayer(nfeat,
                                                 nhid,
                                                 dropout=dropout,
                                                 alpha=alpha,
                                                 concat=True) for _ in range(nheads)]
        for i, attention in enumerate(self.attentions):
            self.add_module('attention_{}'.format(i), attention)

        self.out_att = SpGraphAttentionLayer(nhid * nheads,
                                             nclass,
                                             dropout=dropout,
                                             alpha=alpha,
                                             concat=False)

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
        x = F.dropout(x, self.dropout, training=self.training)
        x = F.elu(self.out_att(x, adj))
        return F.log_softmax(x, dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


def normalize(mx):
    """Row-normalize (utils.normalize, dense numpy)"""
    rowsum = mx.sum(1)
    with np.errstate(divide="ignore"):
        r_inv = np.power(rowsum, -1).flatten()
    r_inv[np.isinf(r_inv)] = 0.
    return r_inv[:, None] * mx


# a small graph: 3 communities of 10 nodes, features correlated with the community
rs = np.random.RandomState(42)
n, nfeat, nclass = 30, 16, 3
labels_np = np.repeat(np.arange(nclass), n // nclass)
adj_np = np.zeros((n, n), np.float32)
for i in range(n):
    for j in range(i + 1, n):
        if rs.rand() < (0.35 if labels_np[i] == labels_np[j] else 0.03):
            adj_np[i, j] = adj_np[j, i] = 1
features_np = normalize((rs.rand(n, nfeat) < 0.2 + 0.5 * (np.arange(nfeat) % nclass == labels_np[:, None])).astype(np.float32))
adj_norm = normalize(adj_np + np.eye(n, dtype=np.float32)).astype(np.float32)
rows, cols = np.nonzero(adj_norm)
indices = torch.from_numpy(np.vstack((rows, cols)).astype(np.int64))
values = torch.from_numpy(adj_norm[rows, cols])
adj = torch.sparse.FloatTensor(indices, values, torch.Size(adj_norm.shape))
print(adj.layout, adj.shape, adj._nnz(), adj.is_sparse, adj.dtype)
features = torch.FloatTensor(features_np)
labels = torch.LongTensor(labels_np)
idx_train = torch.LongTensor(list(range(0, n, 2)))
idx_val = torch.LongTensor(list(range(1, n, 2)))


def set_weights(model, seed):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy((r.standard_normal(tuple(p.shape)) * 0.3).astype(np.float32)))


def fit(model, adj, epochs, lr):
    optimizer = optim.Adam(model.parameters(), lr=lr, weight_decay=5e-4)
    for epoch in range(epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        model.eval()
        output = model(features, adj)
        loss_val = F.nll_loss(output[idx_val], labels[idx_val])
        acc_val = accuracy(output[idx_val], labels[idx_val])
        print('Epoch: {:04d}'.format(epoch+1),
              'loss_train: {:.4f}'.format(loss_train.item()),
              'acc_train: {:.4f}'.format(acc_train.item()),
              'loss_val: {:.4f}'.format(loss_val.item()),
              'acc_val: {:.4f}'.format(acc_val.item()))
    return output


gcn = GCN(nfeat=nfeat, nhid=8, nclass=nclass, dropout=0.0)
print(gcn)
set_weights(gcn, 0)
out = fit(gcn, adj, 6, 0.05)
print(out.shape, out.dtype, out.grad_fn.name())

gat = SpGAT(nfeat=nfeat, nhid=4, nclass=nclass, dropout=0.0, alpha=0.2, nheads=2)
print(gat)
set_weights(gat, 1)
dense_adj = torch.FloatTensor(adj_np + np.eye(n, dtype=np.float32))
out = fit(gat, dense_adj, 5, 0.02)
print(gat.attention_0.W.grad is not None, gat.out_att.a.grad.shape)

# the custom Function's gradients against the dense product's
vals = values.clone().requires_grad_()
b = torch.from_numpy(rs.standard_normal((n, 4)).astype(np.float32)).requires_grad_()
y = SpecialSpmmFunction.apply(indices, vals, torch.Size([n, n]), b)
(y * y).sum().backward()
dense = torch.zeros(n, n).index_put((indices[0], indices[1]), vals.detach()).requires_grad_()
b2 = b.detach().clone().requires_grad_()
((dense @ b2) ** 2).sum().backward()
print(torch.allclose(y, dense @ b2), torch.allclose(b.grad, b2.grad, atol=1e-5),
      torch.allclose(vals.grad, dense.grad[indices[0], indices[1]], atol=1e-5))
print(y.grad_fn.name(), type(y.grad_fn).__name__)
