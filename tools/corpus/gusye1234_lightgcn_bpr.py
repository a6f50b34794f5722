"""gusye1234/LightGCN-PyTorch: LastFM.getSparseGraph (torch.sparse.IntTensor adjacency, to_dense,
degree normalisation D^-1/2 A D^-1/2 on the dense form, nonzero + boolean-mask values back into
torch.sparse.FloatTensor, coalesce), PureMF and LightGCN (computer() with torch.sparse.mm
propagation, __dropout_x over indices()/values() at keep_prob 1, BPR loss with softplus and the
L2 term), BPRLoss (Adam), UniformSample_original_python, shuffle/minibatch and Test's top-k
recall/precision, verbatim but for data (numpy-made user-item interactions instead of LastFM),
starting embeddings from numpy, a few epochs.  Then the adjacency reused as GCN-style code does:
torch.addmm with the sparse graph, sparse_mask of a dense score matrix, sparse * sparse."""
import numpy as np
import torch
from torch import nn, optim

class world:
    device = torch.device('cpu')
    config = {'latent_dim_rec': 8, 'lightGCN_n_layers': 3, 'keep_prob': 1.0, 'A_split': False,
              'pretrain': 0, 'dropout': 1, 'decay': 1e-4, 'lr': 0.01, 'bpr_batch_size': 32,
              'test_u_batch_size': 4}
    topks = [5, 10]
    @staticmethod
    def cprint(s):
        print(s)

rng = np.random.RandomState(0)

class SynthData:
    def __init__(self):
        self.n_users, self.m_items = 20, 30
        u = rng.randint(0, 20, 200); i = rng.randint(0, 30, 200)
        pairs = sorted(set(zip(u.tolist(), i.tolist())))
        tr = pairs[::5]; te = [p for k, p in enumerate(pairs) if k % 5 == 1]
        tr = [p for k, p in enumerate(pairs) if k % 5 != 1]
        self.trainUser = np.array([p[0] for p in tr]); self.trainItem = np.array([p[1] for p in tr])
        self.testUser = np.array([p[0] for p in te]); self.testItem = np.array([p[1] for p in te])
        self.trainDataSize = len(self.trainUser)
        self.Graph = None
        self.allPos = [np.array(sorted(self.trainItem[self.trainUser == k].tolist())) for k in range(self.n_users)]
        self.testDict = {}
        for k, item in enumerate(self.testItem):
            self.testDict.setdefault(int(self.testUser[k]), []).append(int(item))
    def getUserPosItems(self, users):
        return [self.allPos[u] for u in users]
    def getSparseGraph(self):
        if self.Graph is None:
            user_dim = torch.LongTensor(self.trainUser)
            item_dim = torch.LongTensor(self.trainItem)
            first_sub = torch.stack([user_dim, item_dim + self.n_users])
            second_sub = torch.stack([item_dim+self.n_users, user_dim])
            index = torch.cat([first_sub, second_sub], dim=1)
            data = torch.ones(index.size(-1)).int()
            self.Graph = torch.sparse.IntTensor(index, data, torch.Size([self.n_users+self.m_items, self.n_users+self.m_items]))
            print(self.Graph.dtype, self.Graph.layout, self.Graph.is_sparse, self.Graph._nnz())
            dense = self.Graph.to_dense()
            print(dense.dtype, dense.sum().item())
            D = torch.sum(dense, dim=1).float()
            D[D==0.] = 1.
            D_sqrt = torch.sqrt(D).unsqueeze(dim=0)
            dense = dense/D_sqrt
            dense = dense/D_sqrt.t()
            index = dense.nonzero()
            data  = dense[dense >= 1e-9]
            assert len(index) == len(data)
            self.Graph = torch.sparse.FloatTensor(index.t(), data, torch.Size([self.n_users+self.m_items, self.n_users+self.m_items]))
            self.Graph = self.Graph.coalesce().to(world.device)
            print(self.Graph.dtype, self.Graph.is_coalesced(), self.Graph.indices().shape, round(self.Graph.values().sum().item(), 4))
        return self.Graph

class PureMF(nn.Module):
    def __init__(self, config, dataset):
        super(PureMF, self).__init__()
        self.num_users  = dataset.n_users
        self.num_items  = dataset.m_items
        self.latent_dim = config['latent_dim_rec']
        self.f = nn.Sigmoid()
        self.embedding_user = torch.nn.Embedding(num_embeddings=self.num_users, embedding_dim=self.latent_dim)
        self.embedding_item = torch.nn.Embedding(num_embeddings=self.num_items, embedding_dim=self.latent_dim)
    def getUsersRating(self, users):
        users = users.long()
        users_emb = self.embedding_user(users)
        items_emb = self.embedding_item.weight
        scores = torch.matmul(users_emb, items_emb.t())
        return self.f(scores)
    def bpr_loss(self, users, pos, neg):
        users_emb = self.embedding_user(users.long())
        pos_emb   = self.embedding_item(pos.long())
        neg_emb   = self.embedding_item(neg.long())
        pos_scores= torch.sum(users_emb*pos_emb, dim=1)
        neg_scores= torch.sum(users_emb*neg_emb, dim=1)
        loss = torch.mean(nn.functional.softplus(neg_scores - pos_scores))
        reg_loss = (1/2)*(users_emb.norm(2).pow(2) + pos_emb.norm(2).pow(2) + neg_emb.norm(2).pow(2))/float(len(users))
        return loss, reg_loss

class LightGCN(nn.Module):
    def __init__(self, config, dataset):
        super(LightGCN, self).__init__()
        self.config = config
        self.dataset = dataset
        self.__init_weight()
    def __init_weight(self):
        self.num_users  = self.dataset.n_users
        self.num_items  = self.dataset.m_items
        self.latent_dim = self.config['latent_dim_rec']
        self.n_layers = self.config['lightGCN_n_layers']
        self.keep_prob = self.config['keep_prob']
        self.A_split = self.config['A_split']
        self.embedding_user = torch.nn.Embedding(num_embeddings=self.num_users, embedding_dim=self.latent_dim)
        self.embedding_item = torch.nn.Embedding(num_embeddings=self.num_items, embedding_dim=self.latent_dim)
        self.embedding_user.weight.data.copy_(torch.from_numpy(self.config['user_emb']))
        self.embedding_item.weight.data.copy_(torch.from_numpy(self.config['item_emb']))
        print('use pretarined data')
        self.f = nn.Sigmoid()
        self.Graph = self.dataset.getSparseGraph()
        print(f"lgn is already to go(dropout:{self.config['dropout']})")
    def __dropout_x(self, x, keep_prob):
        size = x.size()
        index = x.indices().t()
        values = x.values()
        random_index = torch.rand(len(values)) + keep_prob
        random_index = random_index.int().bool()
        index = index[random_index]
        values = values[random_index]/keep_prob
        g = torch.sparse.FloatTensor(index.t(), values, size)
        return g
    def __dropout(self, keep_prob):
        if self.A_split:
            graph = []
            for g in self.Graph:
                graph.append(self.__dropout_x(g, keep_prob))
        else:
            graph = self.__dropout_x(self.Graph, keep_prob)
        return graph
    def computer(self):
        users_emb = self.embedding_user.weight
        items_emb = self.embedding_item.weight
        all_emb = torch.cat([users_emb, items_emb])
        embs = [all_emb]
        if self.config['dropout']:
            if self.training:
                g_droped = self.__dropout(self.keep_prob)
            else:
                g_droped = self.Graph
        else:
            g_droped = self.Graph
        for layer in range(self.n_layers):
            if self.A_split:
                temp_emb = []
                for f in range(len(g_droped)):
                    temp_emb.append(torch.sparse.mm(g_droped[f], all_emb))
                side_emb = torch.cat(temp_emb, dim=0)
                all_emb = side_emb
            else:
                all_emb = torch.sparse.mm(g_droped, all_emb)
            embs.append(all_emb)
        embs = torch.stack(embs, dim=1)
        light_out = torch.mean(embs, dim=1)
        users, items = torch.split(light_out, [self.num_users, self.num_items])
        return users, items
    def getUsersRating(self, users):
        all_users, all_items = self.computer()
        users_emb = all_users[users.long()]
        items_emb = all_items
        rating = self.f(torch.matmul(users_emb, items_emb.t()))
        return rating
    def getEmbedding(self, users, pos_items, neg_items):
        all_users, all_items = self.computer()
        users_emb = all_users[users]
        pos_emb = all_items[pos_items]
        neg_emb = all_items[neg_items]
        users_emb_ego = self.embedding_user(users)
        pos_emb_ego = self.embedding_item(pos_items)
        neg_emb_ego = self.embedding_item(neg_items)
        return users_emb, pos_emb, neg_emb, users_emb_ego, pos_emb_ego, neg_emb_ego
    def bpr_loss(self, users, pos, neg):
        (users_emb, pos_emb, neg_emb, userEmb0,  posEmb0, negEmb0) = self.getEmbedding(users.long(), pos.long(), neg.long())
        reg_loss = (1/2)*(userEmb0.norm(2).pow(2) + posEmb0.norm(2).pow(2)  + negEmb0.norm(2).pow(2))/float(len(users))
        pos_scores = torch.mul(users_emb, pos_emb)
        pos_scores = torch.sum(pos_scores, dim=1)
        neg_scores = torch.mul(users_emb, neg_emb)
        neg_scores = torch.sum(neg_scores, dim=1)
        loss = torch.mean(torch.nn.functional.softplus(neg_scores - pos_scores))
        return loss, reg_loss
    def forward(self, users, items):
        all_users, all_items = self.computer()
        users_emb = all_users[users]
        items_emb = all_items[items]
        inner_pro = torch.mul(users_emb, items_emb)
        gamma     = torch.sum(inner_pro, dim=1)
        return gamma

class BPRLoss:
    def __init__(self, recmodel, config):
        self.model = recmodel
        self.weight_decay = config['decay']
        self.lr = config['lr']
        self.opt = optim.Adam(recmodel.parameters(), lr=self.lr)
    def stageOne(self, users, pos, neg):
        loss, reg_loss = self.model.bpr_loss(users, pos, neg)
        reg_loss = reg_loss*self.weight_decay
        loss = loss + reg_loss
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.cpu().item()

def UniformSample_original_python(dataset):
    user_num = dataset.trainDataSize
    users = np.random.randint(0, dataset.n_users, user_num)
    allPos = dataset.allPos
    S = []
    for i, user in enumerate(users):
        posForUser = allPos[user]
        if len(posForUser) == 0:
            continue
        posindex = np.random.randint(0, len(posForUser))
        positem = posForUser[posindex]
        while True:
            negitem = np.random.randint(0, dataset.m_items)
            if negitem in posForUser:
                continue
            else:
                break
        S.append([user, positem, negitem])
    return np.array(S)

def minibatch(*tensors, **kwargs):
    batch_size = kwargs.get('batch_size', world.config['bpr_batch_size'])
    if len(tensors) == 1:
        tensor = tensors[0]
        for i in range(0, len(tensor), batch_size):
            yield tensor[i:i + batch_size]
    else:
        for i in range(0, len(tensors[0]), batch_size):
            yield tuple(x[i:i + batch_size] for x in tensors)

def shuffle(*arrays, **kwargs):
    shuffle_indices = np.arange(len(arrays[0]))
    np.random.shuffle(shuffle_indices)
    if len(arrays) == 1:
        result = arrays[0][shuffle_indices]
    else:
        result = tuple(x[shuffle_indices] for x in arrays)
    return result

def BPR_train_original(dataset, Recmodel, bpr, epoch):
    Recmodel.train()
    S = UniformSample_original_python(dataset)
    users = torch.Tensor(S[:, 0]).long()
    posItems = torch.Tensor(S[:, 1]).long()
    negItems = torch.Tensor(S[:, 2]).long()
    users, posItems, negItems = shuffle(users, posItems, negItems)
    total_batch = len(users) // world.config['bpr_batch_size'] + 1
    aver_loss = 0.
    for (batch_i, (batch_users, batch_pos, batch_neg)) in enumerate(minibatch(users, posItems, negItems, batch_size=world.config['bpr_batch_size'])):
        cri = bpr.stageOne(batch_users, batch_pos, batch_neg)
        aver_loss += cri
    aver_loss = aver_loss / total_batch
    return f"loss{aver_loss:.5f}"

def getLabel(test_data, pred_data):
    r = []
    for i in range(len(test_data)):
        groundTrue = test_data[i]
        predictTopK = pred_data[i]
        pred = list(map(lambda x: x in groundTrue, predictTopK))
        pred = np.array(pred).astype("float")
        r.append(pred)
    return np.array(r).astype('float')

def RecallPrecision_ATk(test_data, r, k):
    right_pred = r[:, :k].sum(1)
    recall_n = np.array([len(test_data[i]) for i in range(len(test_data))])
    return {'recall': np.sum(right_pred/recall_n), 'precision': np.sum(right_pred)/k}

def Test(dataset, Recmodel):
    u_batch_size = world.config['test_u_batch_size']
    testDict = dataset.testDict
    Recmodel = Recmodel.eval()
    max_K = max(world.topks)
    results = {'precision': np.zeros(len(world.topks)), 'recall': np.zeros(len(world.topks))}
    with torch.no_grad():
        users = list(testDict.keys())
        for batch_users in minibatch(users, batch_size=u_batch_size):
            allPos = dataset.getUserPosItems(batch_users)
            groundTrue = [testDict[u] for u in batch_users]
            batch_users_gpu = torch.Tensor(batch_users).long()
            rating = Recmodel.getUsersRating(batch_users_gpu)
            exclude_index = []
            exclude_items = []
            for range_i, items in enumerate(allPos):
                exclude_index.extend([range_i] * len(items))
                exclude_items.extend(items)
            rating[exclude_index, exclude_items] = -(1<<10)
            _, rating_K = torch.topk(rating, k=max_K)
            r = getLabel(groundTrue, rating_K.numpy())
            for j, k in enumerate(world.topks):
                ret = RecallPrecision_ATk(groundTrue, r, k)
                results['recall'][j] += ret['recall']; results['precision'][j] += ret['precision']
        results['recall'] /= float(len(users)); results['precision'] /= float(len(users))
        print({k: np.round(v, 5) for k, v in results.items()})

np.random.seed(2020)
ds = SynthData()
wr = np.random.RandomState(5)
world.config['user_emb'] = wr.normal(0, 0.1, (20, 8)).astype(np.float32)
world.config['item_emb'] = wr.normal(0, 0.1, (30, 8)).astype(np.float32)
for name, cls in [('mf', PureMF), ('lgn', LightGCN)]:
    m = cls(world.config, ds)
    if name == 'mf':
        with torch.no_grad():
            m.embedding_user.weight.copy_(torch.from_numpy(world.config['user_emb']))
            m.embedding_item.weight.copy_(torch.from_numpy(world.config['item_emb']))
    bpr = BPRLoss(m, world.config)
    for epoch in range(4):
        print(name, epoch, BPR_train_original(ds, m, bpr, epoch))
    Test(ds, m)
    r = m.getUsersRating(torch.tensor([0, 3, 5]))
    print(name, r.shape, r.dtype, r.grad_fn.name(), np.round(r.detach().numpy()[:, :4], 4))

# the normalised graph in the idioms other GCN code uses on it
G = ds.getSparseGraph()
emb = torch.from_numpy(wr.normal(0, 0.1, (50, 4)).astype(np.float32)).requires_grad_()
bias = torch.full((50, 4), 0.5)
out = torch.addmm(bias, G, emb, beta=0.5, alpha=2.0)
out.pow(2).sum().backward()
print('addmm', out.shape, out.grad_fn.name(), round(out.sum().item(), 4), round(emb.grad.abs().sum().item(), 4))
scores = torch.from_numpy(np.arange(2500, dtype=np.float32).reshape(50, 50) / 2500)
masked = scores.sparse_mask(G)
print('sparse_mask', masked._nnz(), masked.is_coalesced(), round(torch.sparse.sum(masked).item(), 4))
att = torch.sparse.softmax(masked, dim=1)
both = att * G
print('sparse*sparse', both._nnz(), both.is_coalesced(), round(torch.sparse.sum(both).item(), 5))
summed = G + torch.sparse_coo_tensor(G.indices(), torch.ones(G._nnz(), dtype=torch.int64), G.shape)
print('promoted', summed.dtype, round(summed.coalesce().values().sum().item(), 4))
