"""Batched k-means then EM for a full-covariance Gaussian mixture, written with plain tensor ops:
squared distances by broadcasting, argmin labels written into a float tensor by slices,
nonzero().squeeze() + index_select to gather a cluster, centre rows assigned in place,
torch.inverse / torch.det / torch.log per component, the max-normalised exp of the log densities
(the source's own scaling), responsibilities, and the M-step's weighted means and covariances
written back row by row; also the per-batch variant that accumulates sums in lists and cats them.

Source: smiler96/GMM-KMeans-PyTorch, GMM-Pytorch.py (kmeans_fun_gpu, _cal_var, GMM, GMM_Batch,
mahalanobias_metric_gpu).  Adapted: .cuda() dropped; sklearn's make_blobs replaced by numpy
blobs (600 points, 4 features, 3 centres) and LedoitWolf's covariance by numpy's biased one;
torch.randperm for the initial centres replaced by a numpy permutation; 20 k-means iterations,
3 EM iterations; plotting and timing left out.
"""
import numpy as np
import torch


def squared_distances(X, centers):
    return torch.sum((X.unsqueeze(1) - centers.unsqueeze(0)) ** 2, dim=-1)


def kmeans(X, K, max_iter=20, batch_size=256, tol=1e-40):
    N = X.shape[0]
    centers = X[torch.from_numpy(np.random.RandomState(0).permutation(N)[:K])]
    batches = N // batch_size
    last = 1 if N % batch_size != 0 else 0
    labels = torch.zeros([N])
    for _ in range(max_iter):
        for bn in range(batches + last):
            end = -1 if (bn == batches and last == 1) else (bn + 1) * batch_size
            labels[bn * batch_size: end] = torch.argmin(squared_distances(X[bn * batch_size: end], centers), dim=1)
        previous = centers.clone()
        for k in range(K):
            members = torch.nonzero(labels == k).squeeze()
            centers[k] = torch.index_select(X, 0, members).mean(dim=0)
        shift = torch.sum(torch.sqrt(torch.sum((centers - previous) ** 2, dim=1)))
        if shift < tol:
            break
    return centers.detach().cpu().numpy(), labels.detach().cpu().numpy()


def initial_covariances(X, centers, K):
    D = X.shape[1]
    labels = np.argmin(((X[:, None] - centers[None]) ** 2).sum(2), axis=1)
    cov = np.zeros([K, D, D])
    for k in range(K):
        cov[k] = np.cov(X[labels == k], rowvar=False, bias=True) + np.eye(D) * 1e-10
    return cov.astype(np.float32)


class GMM:
    def __init__(self, K):
        self.K, self.eps, self.log2pi = K, 1e-10, np.log(2 * np.pi)

    def log_densities(self, x):
        log_prob = torch.zeros([x.shape[0], self.K])
        for k in range(self.K):
            delta = x - self.mu[k].unsqueeze(0)
            dist = torch.sum(torch.mul(delta, torch.mm(delta, torch.inverse(self.var[k]))), dim=1)
            log_prob[:, k] = -0.5 * (self.D * self.log2pi + torch.log(torch.det(self.var[k])) + dist) \
                + torch.log(self.alpha[k])
        return log_prob

    def e_step(self, x):
        self.log_prob = self.log_densities(x)
        scale = -torch.max(self.log_prob, dim=1, keepdim=True)[0]
        prob = torch.exp(self.log_prob / scale)
        print(f"any nan: {torch.isnan(prob).int().sum().item()}; max {torch.max(prob):.6f}")
        self.prob = prob / (torch.sum(prob, dim=1, keepdim=True) + self.eps)
        return self.prob

    def start(self, X):
        self.N, self.D = X.shape
        self.eps_mat = torch.eye(self.D) * self.eps
        centers, _ = kmeans(X, self.K)
        print("k-means centres", np.round(centers, 3).tolist())
        self.mu = torch.from_numpy(centers.astype(np.float32))
        self.var = torch.from_numpy(initial_covariances(X.numpy(), centers, self.K))
        self.alpha = torch.ones([self.K, 1]) / self.K

    def fit(self, X, iters=3):
        self.start(X)
        for it in range(iters):
            self.e_step(X)
            self.alpha = torch.sum(self.prob, dim=0)
            for k in range(self.K):
                w = self.prob[:, k].unsqueeze(1)
                self.mu[k] = torch.sum(X * w, dim=0) / self.alpha[k]
                delta = X - self.mu[k].unsqueeze(0)
                self.var[k] = torch.mm(torch.transpose(delta, 0, 1), delta * w) / self.alpha[k] + self.eps_mat
            self.alpha = self.alpha / self.N
            print(f"iter {it + 1} -sum log p: {-torch.sum(self.log_prob).item():.2f}")
        return self.mu, torch.argmax(self.e_step(X), dim=1)

    def fit_batched(self, X, batch_size=256, iters=3):
        self.start(X)
        batches, last = self.N // batch_size, 1 if self.N % batch_size else 0
        for it in range(iters):
            cache = {"prob": [], "alpha": [], "mu": [[] for _ in range(self.K)], "var": [[] for _ in range(self.K)]}
            for bn in range(batches + last):
                end = -1 if (bn == batches and last == 1) else (bn + 1) * batch_size
                x = X[bn * batch_size: end]
                prob = self.e_step(x)
                cache["prob"].append(prob)
                for k in range(self.K):
                    w = prob[:, k].unsqueeze(1)
                    cache["mu"][k].append(torch.sum(x * w, dim=0).unsqueeze(0))
                    delta = x - self.mu[k].unsqueeze(0)
                    cache["var"][k].append(torch.mm(torch.transpose(delta, 0, 1), delta * w).unsqueeze(0))
                cache["alpha"].append(torch.sum(prob, dim=0).unsqueeze(0))
            self.alpha = torch.sum(torch.cat(cache["alpha"], dim=0), dim=0)
            for k in range(self.K):
                self.mu[k] = torch.sum(torch.cat(cache["mu"][k], dim=0), dim=0) / self.alpha[k]
                self.var[k] = torch.sum(torch.cat(cache["var"][k], dim=0), dim=0) / self.alpha[k] + self.eps_mat
            self.alpha = self.alpha / self.N
            prob = torch.cat(cache["prob"], dim=0)
            print(f"batched iter {it + 1} -sum log resp: {-torch.sum(prob.log()).item():.2f}", prob.shape)
        return self.mu, torch.argmax(prob, dim=1)


def mahalanobis(X, mean, var):
    dis = torch.zeros([X.shape[0], mean.shape[0]])
    for k in range(mean.shape[0]):
        delta = X - mean[k]
        dis[:, k] = torch.sqrt_(torch.sum(torch.mul(delta, torch.mm(delta, torch.inverse(var[k]))), dim=1))
    return dis


rs = np.random.RandomState(1)
K = 3
blob_centres = rs.randn(K, 4) * 5
truth = rs.randint(0, K, 600)
X = torch.from_numpy((blob_centres[truth] + rs.randn(600, 4)).astype(np.float32))

centres, labels = kmeans(X, K)
print(np.round(centres, 3), labels[:12], labels.dtype)

gmm = GMM(K)
mu, pred = gmm.fit(X)
print(mu, pred[:20], pred.dtype, torch.bincount(pred))
print("alpha", gmm.alpha)

gmm = GMM(K)
mu, pred = gmm.fit_batched(X)
print(mu, pred[:20], torch.bincount(pred, minlength=K))
print("alpha", gmm.alpha)
print(mahalanobis(X[:4], mu, gmm.var))
