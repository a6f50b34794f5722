"""matthieuneau/gnn-from-scratch: the dense GCN (A_hat @ x @ W), the dense GAT attention layer
(leaky_relu_ on broadcast scores, -inf where the adjacency is zero, softmax over neighbours) in
its transductive and inductive (residual, head-averaging) forms trained as gat_transductive.py
does, and model.py's sparse path: a coalesced sparse_coo_tensor adjacency with self-loops, the
D^-1/2 A D^-1/2 diffusion matrix from torch.sparse.sum / indices() / values(), ConvNetLayer
(sparse @ dense, BatchNorm1d, residual), batch_mean_pool and the readout MLP for each task.
Verbatim but for data (a numpy-made ring-and-chords graph instead of Planetoid/ZINC), no
wandb/yaml/tqdm, a few epochs, starting weights copied from numpy and dropout set to 0 so the
run is deterministic."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
device = torch.device("cpu")


class GCN(nn.Module):
    def __init__(self, node_dim, hidden_dim, n_classes, dropout):
        super(GCN, self).__init__()
        self.W0 = nn.Parameter(
            nn.init.xavier_uniform_(torch.empty(node_dim, hidden_dim))
        )
        self.dropout = nn.Dropout(dropout)
        self.W1 = nn.Parameter(
            nn.init.xavier_uniform_(torch.empty(hidden_dim, n_classes))
        )

    def forward(self, x, A_hat):
        x = self.dropout(x)
        x = F.relu(A_hat @ x @ self.W0)
        x = self.dropout(x)
        logits = A_hat @ x @ self.W1
        return logits


class AttentionLayer(nn.Module):
    def __init__(self, input_dim, output_dim):
        super(AttentionLayer, self).__init__()
        self.W = nn.Parameter(
            nn.init.xavier_uniform_(torch.empty(output_dim, input_dim))
        )
        self.a1 = nn.Parameter(
            nn.init.xavier_uniform_(torch.empty(output_dim, 1))
        )  # a = concat(a1, a2)
        self.a2 = nn.Parameter(nn.init.xavier_uniform_(torch.empty(output_dim, 1)))

    def forward(self, x, adj_mat):
        x = x @ self.W.T  # matrix containing the W*hi vectors
        f1 = (x @ self.a1).squeeze()
        f2 = (x @ self.a2).squeeze()
        e = F.leaky_relu_(f1.unsqueeze(1) + f2.unsqueeze(0))  # Broadcast
        e = e * adj_mat  # ensures that the softmax is only performed over the neighbors
        e = torch.where(e == 0, -torch.inf, e)
        alpha = F.softmax(e, dim=1)  # or dim=0?
        return alpha @ x


class GATTransductive(nn.Module):
    def __init__(self, node_dim, hidden_dim, n_classes, n_heads, dropout):
        super(GATTransductive, self).__init__()
        self.n_heads = n_heads
        self.attention1 = nn.ModuleList(
            AttentionLayer(node_dim, hidden_dim) for _ in range(n_heads)
        )
        self.dropout = nn.Dropout(dropout)
        # only one head for second layer
        self.attention2 = AttentionLayer(hidden_dim * n_heads, n_classes)
        # self.fc1 = nn.Linear(hidden_dim * n_heads, n_classes)

    def forward(self, x, adj_mat):
        x = torch.cat(
            [self.attention1[i](x, adj_mat) for i in range(self.n_heads)], dim=1
        )
        x = F.elu(x)
        x = self.dropout(x)
        logits = self.attention2(x, adj_mat)
        logits = self.dropout(logits)
        return logits


class GATInductive(nn.Module):
    def __init__(self, node_dim, hidden_dim, n_classes, n_heads_1, n_heads_2):
        super(GATInductive, self).__init__()
        self.attention1 = nn.ModuleList(
            AttentionLayer(node_dim, hidden_dim) for _ in range(n_heads_1)
        )
        # only one head for second layer
        self.attention2 = nn.ModuleList(
            AttentionLayer(hidden_dim * n_heads_1, hidden_dim) for _ in range(n_heads_1)
        )
        self.attention3 = nn.ModuleList(
            AttentionLayer(hidden_dim * n_heads_1, n_classes) for _ in range(n_heads_2)
        )

    def forward(self, x, adj_mat):
        x = torch.cat([attention(x, adj_mat) for attention in self.attention1], dim=1)
        x = F.elu(x)
        residual = x
        x = torch.cat([attention(x, adj_mat) for attention in self.attention2], dim=1)
        x = F.elu(x) + residual
        logits = torch.mean(
            torch.stack([attention(x, adj_mat) for attention in self.attention3]), dim=0
        )
        return logits
build_adj_mat_dense = None
def build_adj_mat_dense(node_features, edge_index):
    """Build the adjacency matrix of a graph from edge_index that looks like this: [[1, 4, 5, 6], [2, 3, 3, 5]]
    cf. https://huggingface.co/datasets/graphs-datasets/ZINC for more details"""
    n_nodes = node_features.shape[0]
    n_edges = len(edge_index[0])
    adj_mat = torch.zeros((n_nodes, n_nodes))
    for i in range(n_edges):
        adj_mat[edge_index[0][i], edge_index[1][i]] = 1
    adj_mat += torch.eye(adj_mat.shape[0])  # Ensures deg_i > 0 and stabilize training
    return adj_mat



class GAT_reg_class(nn.Module):
    def __init__(
        self,
        input_dim,
        node_dim,
        hidden_dim,
        output_dim,
        n_heads,
        n_hidden_layers_mlp,
        dropout,
        task,
    ):
        super().__init__()
        if task not in [
            "regression",
            "classification",
            "node_classification",
            "link_prediction",
        ]:
            raise ValueError(
                "task must be either 'regression', 'classification', 'node_classification' or 'link_prediction'"
            )
        self.task = task
        self.n_heads = n_heads
        self.U0 = nn.Linear(input_dim, node_dim, bias=False)
        self.attention = nn.ModuleList(
            AttentionLayerM(node_dim, hidden_dim) for _ in range(n_heads)
        )
        self.dropout = nn.Dropout(dropout)
        in_dim_MLP = (
            hidden_dim * n_heads
            if task in ["classification", "regression", "node_classification"]
            else 2 * hidden_dim * n_heads
        )
        self.readOutLayer = MLPReadout(
            in_dim_MLP, output_dim, n_hidden_layers_mlp, hidden_dim, bias=True
        )

    def forward(self, x, edge_index, batch=None):
        adj_mat = build_adj_mat(edge_index)
        x = x.float()
        x = self.U0(x)
        x = torch.cat(
            [self.attention[i](x, adj_mat) for i in range(self.n_heads)], dim=1
        )
        x = self.dropout(x)
        if self.task in ["classification", "regression"]:
            x = batch_mean_pool(x, batch)
        elif self.task == "node_classification":
            x = x
        elif self.task == "link_prediction":
            x = torch.cat([x[edge_index[0]], x[edge_index[1]]], dim=1)
        logits = self.readOutLayer(x)
        logits = self.dropout(logits)
        return logits


class AttentionLayerM(nn.Module):
    def __init__(self, input_dim, output_dim, device=device):
        super().__init__()
        self.W = nn.init.xavier_uniform_(torch.empty(output_dim, input_dim)).to(device)
        self.a1 = nn.init.xavier_uniform_(torch.empty(output_dim, 1)).to(
            device
        )  # a = concat(a1, a2)
        self.a2 = nn.init.xavier_uniform_(torch.empty(output_dim, 1)).to(device)

    def forward(self, x, adj_mat):
        x = x @ self.W.T  # matrix containing the W*hi vectors
        f1 = (x @ self.a1).squeeze()
        f2 = (x @ self.a2).squeeze()
        e = F.leaky_relu(f1.unsqueeze(1) + f2.unsqueeze(0))  # Broadcast
        e = e * adj_mat  # ensures that the softmax is only performed over the neighbors
        e = torch.where(e == 0, torch.tensor(-1e9, device=e.device), e)
        alpha = F.softmax(e, dim=1)  # or dim=0?
        x = F.elu(alpha @ x)
        return x


class GCN_reg_class(nn.Module):
    def __init__(
        self,
        input_dim,
        n_layers_conv,
        node_dim,
        n_hidden_layers_mlp,
        hidden_dim,
        output_dim,
        task,
    ) -> None:
        super().__init__()
        if task not in [
            "regression",
            "classification",
            "node_classification",
            "link_prediction",
        ]:
            raise ValueError(
                "task must be either 'regression', 'classification', 'node_classification' or 'link_prediction'"
            )
        self.task = task
        self.n_layers_conv = n_layers_conv
        self.U0 = nn.Linear(input_dim, node_dim, bias=False)
        self.convLayers = nn.ModuleList(
            [
                ConvNetLayer(node_dim, bias=False, dropout=0.5, residual=True)
                for _ in range(n_layers_conv)
            ]
        )
        in_dim_MLP = (
            node_dim
            if task in ["classification", "regression", "node_classification"]
            else 2 * node_dim
        )
        self.readOutLayer = MLPReadout(
            in_dim_MLP, output_dim, n_hidden_layers_mlp, hidden_dim, bias=True
        )

    def forward(self, x, edge_index, batch=None):
        # print(x.shape)
        x = x.float()
        x = self.U0(x)  # self.b0 is broadcasted properly?
        # print(x.shape)
        for i in range(self.n_layers_conv):
            x = self.convLayers[i](x, edge_index)
        if self.task in ["classification", "regression"]:
            x = batch_mean_pool(x, batch)
        elif self.task == "node_classification":
            x = x
        elif self.task == "link_prediction":
            x = torch.cat([x[edge_index[0]], x[edge_index[1]]], dim=1)
        # print(x.shape)
        x = self.readOutLayer(x)
        # print(x.shape)
        return x


class ConvNetLayer(nn.Module):
    def __init__(self, node_dim, bias=False, dropout=0.5, residual=True) -> None:
        super().__init__()
        self.U = nn.Linear(node_dim, node_dim, bias=bias)
        self.batchnorm = nn.BatchNorm1d(node_dim)
        self.activation = nn.Tanh()  # non linear activation function
        self.dropout = nn.Dropout(dropout)
        self.residual = residual

    def forward(self, x, edge_index):
        x_in = x
        num_nodes = x.shape[0]
        diffusion_matrix = build_diffusion_matrix(edge_index, num_nodes=num_nodes)
        x = diffusion_matrix @ x
        x = self.U(x)
        x = F.relu(x)
        x = self.batchnorm(x)
        x = self.activation(x)
        if self.residual:
            x = x + x_in
        x = self.dropout(x)
        return x


class MLPReadout(nn.Module):
    def __init__(
        self, input_dim, output_dim, n_hidden_layers_mlp, hidden_dim, bias=True
    ):  # L=nb_hidden_layers
        super().__init__()
        list_FC_layers = [nn.Linear(input_dim, hidden_dim, bias=bias)]
        list_FC_layers += [
            nn.Linear(hidden_dim, hidden_dim, bias=bias)
            for l in range(n_hidden_layers_mlp)
        ]
        list_FC_layers.append(nn.Linear(hidden_dim, output_dim, bias=bias))
        self.FC_layers = nn.ModuleList(list_FC_layers)
        self.L = n_hidden_layers_mlp

    def forward(self, x):
        y = x
        for l in range(self.L + 1):
            y = self.FC_layers[l](y)
            y = F.relu(y)
        y = self.FC_layers[self.L + 1](y).squeeze()
        return y


def build_adj_mat(edge_index, num_nodes=None):
    """
    Build sparse adjacency matrix with self-loops.
    Args:
        edge_index: Tensor of shape (2, E)
        num_nodes: Optional number of nodes (int)
    Returns:
        Sparse adjacency matrix (num_nodes x num_nodes)
    """
    if num_nodes is None:
        num_nodes = int(torch.max(edge_index)) + 1

    # Ajouter les self-loops : concaténer les indices diagonaux
    self_loops = torch.arange(num_nodes, device=edge_index.device)
    self_loop_edges = torch.stack([self_loops, self_loops], dim=0)

    edge_index_with_loops = torch.cat([edge_index, self_loop_edges], dim=1)
    values = torch.ones(edge_index_with_loops.size(1), device=edge_index.device)

    # Créer la matrice d'adjacence sparse
    adj = torch.sparse_coo_tensor(edge_index_with_loops, values, (num_nodes, num_nodes))
    return adj.coalesce()  # Important pour avoir des indices triés


def build_diffusion_matrix(edge_index, num_nodes=None):
    """
    Compute the normalized diffusion matrix: D^{-1/2} A D^{-1/2}
    Returns a sparse matrix.
    """
    adj = build_adj_mat(edge_index, num_nodes)

    # Calcul du degré (somme par ligne)
    deg = torch.sparse.sum(adj, dim=1).to_dense()  # Shape (N,)
    deg_inv_sqrt = torch.pow(deg, -0.5)
    deg_inv_sqrt[torch.isinf(deg_inv_sqrt)] = 0.0  # Éviter les inf

    # Construire D^{-1/2} * A * D^{-1/2}
    row, col = adj.indices()
    values = adj.values() * deg_inv_sqrt[row] * deg_inv_sqrt[col]

    diffusion = torch.sparse_coo_tensor(adj.indices(), values, adj.size())
    return diffusion.coalesce()


def batch_mean_pool(x, batch):
    """Effectue une moyenne des features par graphe"""
    batch_size = batch.max().item() + 1
    mean_pooled = torch.zeros((batch_size, x.shape[1]), device=x.device)
    count = torch.zeros(batch_size, device=x.device)

    for i in range(batch.shape[0]):
        mean_pooled[batch[i]] += x[i]
        count[batch[i]] += 1

    mean_pooled /= count.unsqueeze(1)  # Normalisation
    return mean_pooled

# synthetic Cora-shaped data (numpy): 60 nodes, 12 features, 3 classes, ring + chords
rs = np.random.RandomState(3)
n_nodes, n_feat, n_classes = 60, 12, 3
labels = np.arange(n_nodes) % n_classes
feats = rs.random_sample((n_nodes, n_feat)) + (np.arange(n_feat)[None, :] % n_classes == labels[:, None])
src = list(range(n_nodes)) + list(rs.randint(0, n_nodes, 30))
dst = [(i + 3) % n_nodes for i in range(n_nodes)] + list(rs.randint(0, n_nodes, 30))
edge_index = torch.tensor([src + dst, dst + src], dtype=torch.long)
x = torch.tensor(feats, dtype=torch.float32)
y = F.one_hot(torch.tensor(labels)).float()
train_mask = torch.zeros(n_nodes, dtype=torch.bool); train_mask[:30] = True
val_mask = torch.zeros(n_nodes, dtype=torch.bool); val_mask[30:45] = True
n_val = int(val_mask.sum())

adj_dense = build_adj_mat_dense(x, edge_index)
print(adj_dense.shape, adj_dense.sum())
deg = adj_dense.sum(1)
A_hat = adj_dense / torch.sqrt(deg.unsqueeze(1) * deg.unsqueeze(0))

wrs = np.random.RandomState(7)


def from_numpy_(model):
    """Starting weights from numpy, the same under any library; no dropout."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(wrs.uniform(-0.4, 0.4, tuple(p.shape)), dtype=p.dtype))
        for mod in model.modules():
            if isinstance(mod, nn.Dropout):
                mod.p = 0.0
    return model


for name, model in [("GCN", GCN(n_feat, 16, n_classes, 0.0)), ("GAT", GATTransductive(n_feat, 8, n_classes, 2, 0.0)),
                    ("GATInd", GATInductive(n_feat, 8, n_classes, 2, 2))]:
    from_numpy_(model)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    adj = A_hat if name == "GCN" else adj_dense
    for i in range(12):
        model.train()
        batch = np.random.RandomState(i).choice(np.arange(30), size=10, replace=False)
        batch_mask = torch.zeros_like((train_mask))
        batch_mask[batch] = True
        optimizer.zero_grad()
        y_pred = model(x, adj)
        train_loss = loss_fn(y_pred[batch_mask], y[batch_mask])
        train_loss.backward()
        optimizer.step()
        with torch.no_grad():
            model.eval()
            y_pred = model(x, adj)[val_mask]
            y_true = y[val_mask]
            valid_loss = loss_fn(y_pred, y_true)
            labels_pred = torch.argmax(y_pred, dim=1)
            labels_t = torch.argmax(y_true, dim=1)
            accuracy = torch.sum(labels_t == labels_pred) / n_val
        if i % 4 == 0:
            print(name, f"Epoch {i:03d} | Train Loss: {train_loss.item():.4f} | Valid Loss: {valid_loss.item():.4f} | Accuracy: {accuracy:.4f}")
    print(name, accuracy, y_pred[:2])

# model.py: sparse adjacency, normalised diffusion matrix, ConvNetLayer, batch_mean_pool
import warnings
warnings.simplefilter("ignore", UserWarning)   # torch 2.13: unchecked sparse invariants
adj_sp = build_adj_mat(edge_index, n_nodes)
print(adj_sp)
diff = build_diffusion_matrix(edge_index, num_nodes=n_nodes)
print(diff.shape, diff._nnz(), diff.values()[:5])
batch_vec = torch.tensor(np.repeat(np.arange(4), 15))
for task in ["node_classification", "classification", "regression", "link_prediction"]:
    m = from_numpy_(GCN_reg_class(n_feat, 2, 16, 1, 16, n_classes if "class" in task else 1, task))
    m.eval()
    out = m(x, edge_index, batch_vec)
    print(task, out.shape, out[:2])
m = from_numpy_(GCN_reg_class(n_feat, 2, 16, 1, 16, 1, "regression"))
h = m.U0(x)
print("diffusion @ h", type((diff @ h).grad_fn).__name__, torch.sparse.mm(diff, h)[:1])
opt = optim.Adam(m.parameters(), lr=1e-3)
target = torch.tensor(np.arange(4, dtype=np.float32)).unsqueeze(1)
for step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(m(x, edge_index, batch_vec), target)
    loss.backward()
    opt.step()
    print("reg step", step, round(loss.item(), 4))
try:
    GCN_reg_class(n_feat, 2, 16, 1, 16, 1, "bogus")
except ValueError as e:
    print("ValueError", e)
