"""Bag-of-words text classification the way small NLP-from-scratch posts do it with torch:
a sparse COO term-count matrix, TF-IDF weighting with smoothed idf, cosine similarities, a
nearest-centroid classifier with index_add_ / scatter_reduce / index_reduce, multinomial naive
Bayes from per-class counts, and latent semantic analysis of the sparse matrix by
torch.pca_lowrank (centred and not) with q equal to its rank, so the singular values are exact
and independent of the random test matrix."""
import torch
from collections import Counter

corpus = ["the cat sat on the mat", "the dog sat on the log", "cats and dogs", "the mat was red", "a dog and a cat"]
labels = torch.tensor([0, 1, 0, 0, 1])
tokens = [doc.split() for doc in corpus]
vocab = sorted(set(w for t in tokens for w in t))
w2i = {w: i for i, w in enumerate(vocab)}
print(len(vocab))
rows, cols, vals = [], [], []
for d, toks in enumerate(tokens):
    for w, c in Counter(toks).items():
        rows.append(d); cols.append(w2i[w]); vals.append(float(c))
tf = torch.sparse_coo_tensor(torch.tensor([rows, cols]), torch.tensor(vals), (len(corpus), len(vocab)))
print(tf.is_sparse, tf.layout, tf.shape, tf._nnz())
tf = tf.coalesce()
print(tf.indices()[:, :5], tf.values()[:5])
dense = tf.to_dense()
df = (dense > 0).sum(0)
idf = torch.log((1 + len(corpus)) / (1 + df)) + 1
print(df, idf.dtype)
tfidf = dense * idf
tfidf = tfidf / tfidf.norm(dim=1, keepdim=True)
print(tfidf.sum(1))
sim = tfidf @ tfidf.T
print(sim.round(decimals=3))
print(torch.nn.functional.cosine_similarity(tfidf[0:1], tfidf, dim=1))
print(torch.sparse.sum(tf, dim=1).to_dense())
print(torch.sparse.mm(tf, torch.ones(len(vocab), 1)).squeeze())
print(torch.sparse.sum(tf))
print((tf @ torch.ones(len(vocab))).shape)
# centroid classifier with scatter_reduce / index_reduce
n_cls = 2
cent = torch.zeros(n_cls, len(vocab)).index_add_(0, labels, tfidf) / torch.bincount(labels).unsqueeze(1)
cent2 = torch.zeros(n_cls, len(vocab)).scatter_reduce(0, labels.unsqueeze(1).expand_as(tfidf), tfidf, reduce="mean", include_self=False)
print(torch.allclose(cent, cent2))
mx = torch.zeros(n_cls, len(vocab)).scatter_reduce(0, labels.unsqueeze(1).expand_as(tfidf), tfidf, reduce="amax")
print(mx.sum(1))
mx2 = torch.full((n_cls, len(vocab)), -1.0).index_reduce_(0, labels, tfidf, "amax", include_self=False)
print(torch.equal(mx, mx2.clamp(min=0)))
pred = (tfidf @ cent.T).argmax(1)
print(pred, (pred == labels).float().mean())
# co-occurrence SVD (LSA)
U, S, V = torch.svd_lowrank(tfidf, q=3, niter=6)
print(U.shape, S.shape, V.shape)
for center in (False, True):
    q = 4 if center else 5  # (centring removes one dimension)
    Us, Ss, Vs = torch.pca_lowrank(tf, q=q, center=center)
    ref = dense - dense.mean(0) if center else dense
    print(center, Us.shape, Vs.shape, Us.layout, Ss)
    print(torch.allclose(Ss, torch.linalg.svdvals(ref)[:q], rtol=1e-4), torch.allclose((Us * Ss) @ Vs.T, ref, atol=1e-4))
csr = dense.to_sparse_csr()
print(csr.layout, csr.crow_indices(), csr.col_indices().shape)
print(dense.to_sparse().values().shape, dense.to_sparse(1).shape)
print(torch.sparse.softmax(tf, dim=1).to_dense()[0].sum())

# multinomial naive Bayes on the raw counts
counts = torch.zeros(2, len(vocab)).index_add_(0, labels, dense)
log_theta = torch.log((counts + 1.0) / (counts + 1.0).sum(1, keepdim=True))
log_prior = torch.log(torch.bincount(labels).float() / len(labels))
jll = dense @ log_theta.T + log_prior
print(jll)
print("nb predictions", jll.argmax(1).tolist(), "log-proba", torch.log_softmax(jll, 1)[:, 1])
