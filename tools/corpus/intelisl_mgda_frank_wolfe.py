# MGDA-UB Frank-Wolfe min-norm solver (Sener & Koltun 2018 style) on torch gradients
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MinNormSolver:
    MAX_ITER = 250
    STOP_CRIT = 1e-5

    def _min_norm_element_from2(v1v1, v1v2, v2v2):
        if v1v2 >= v1v1:
            gamma = 0.999
            cost = v1v1
            return gamma, cost
        if v1v2 >= v2v2:
            gamma = 0.001
            cost = v2v2
            return gamma, cost
        gamma = -1.0 * ((v1v2 - v2v2) / (v1v1 + v2v2 - 2 * v1v2))
        cost = v2v2 + gamma * (v1v2 - v2v2)
        return gamma, cost

    def _min_norm_2d(vecs, dps):
        dmin = 1e8
        for i in range(len(vecs)):
            for j in range(i + 1, len(vecs)):
                if (i, j) not in dps:
                    dps[(i, j)] = 0.0
                    for k in range(len(vecs[i])):
                        dps[(i, j)] += torch.mul(vecs[i][k], vecs[j][k]).sum().data.cpu()
                    dps[(j, i)] = dps[(i, j)]
                if (i, i) not in dps:
                    dps[(i, i)] = 0.0
                    for k in range(len(vecs[i])):
                        dps[(i, i)] += torch.mul(vecs[i][k], vecs[i][k]).sum().data.cpu()
                if (j, j) not in dps:
                    dps[(j, j)] = 0.0
                    for k in range(len(vecs[i])):
                        dps[(j, j)] += torch.mul(vecs[j][k], vecs[j][k]).sum().data.cpu()
                c, d = MinNormSolver._min_norm_element_from2(dps[(i, i)], dps[(i, j)], dps[(j, j)])
                if d < dmin:
                    dmin = d
                    sol = [(i, j), c, d]
        return sol, dps

    def _projection2simplex(y):
        m = len(y)
        sorted_y = np.flip(np.sort(y), axis=0)
        tmpsum = 0.0
        tmax_f = (np.sum(y) - 1.0) / m
        for i in range(m - 1):
            tmpsum += sorted_y[i]
            tmax = (tmpsum - 1) / (i + 1.0)
            if tmax > sorted_y[i + 1]:
                tmax_f = tmax
                break
        return np.maximum(y - tmax_f, np.zeros(y.shape))

    def _next_point(cur_val, grad, n):
        proj_grad = grad - (np.sum(grad) / n)
        tm1 = -1.0 * cur_val[proj_grad < 0] / proj_grad[proj_grad < 0]
        tm2 = (1.0 - cur_val[proj_grad > 0]) / (proj_grad[proj_grad > 0])
        skippers = np.sum(tm1 < 1e-7) + np.sum(tm2 < 1e-7)
        t = 1
        if len(tm1[tm1 > 1e-7]) > 0:
            t = np.min(tm1[tm1 > 1e-7])
        if len(tm2[tm2 > 1e-7]) > 0:
            t = min(t, np.min(tm2[tm2 > 1e-7]))
        next_point = proj_grad * t + cur_val
        next_point = MinNormSolver._projection2simplex(next_point)
        return next_point

    def find_min_norm_element_FW(vecs):
        dps = {}
        init_sol, dps = MinNormSolver._min_norm_2d(vecs, dps)
        n = len(vecs)
        sol_vec = np.zeros(n)
        sol_vec[init_sol[0][0]] = init_sol[1]
        sol_vec[init_sol[0][1]] = 1 - init_sol[1]
        if n < 3:
            return sol_vec, init_sol[2]
        iter_count = 0
        grad_mat = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                grad_mat[i, j] = dps[(i, j)]
        while iter_count < MinNormSolver.MAX_ITER:
            t_iter = np.argmin(np.dot(grad_mat, sol_vec))
            v1v1 = np.dot(sol_vec, np.dot(grad_mat, sol_vec))
            v1v2 = np.dot(sol_vec, grad_mat[:, t_iter])
            v2v2 = grad_mat[t_iter, t_iter]
            nc, nd = MinNormSolver._min_norm_element_from2(v1v1, v1v2, v2v2)
            new_sol_vec = nc * sol_vec
            new_sol_vec[t_iter] += 1 - nc
            change = new_sol_vec - sol_vec
            if np.sum(np.abs(change)) < MinNormSolver.STOP_CRIT:
                return sol_vec, nd
            sol_vec = new_sol_vec
            iter_count += 1
        return sol_vec, nd


def gradient_normalizers(grads, losses, normalization_type):
    gn = {}
    if normalization_type == 'l2':
        for t in grads:
            gn[t] = np.sqrt(np.sum([gr.pow(2).sum().data.cpu() for gr in grads[t]]))
    elif normalization_type == 'loss':
        for t in grads:
            gn[t] = losses[t]
    elif normalization_type == 'loss+':
        for t in grads:
            gn[t] = losses[t] * np.sqrt(np.sum([gr.pow(2).sum().data.cpu() for gr in grads[t]]))
    elif normalization_type == 'none':
        for t in grads:
            gn[t] = 1.0
    return gn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 12)

    def forward(self, x):
        return F.relu(self.fc2(F.relu(self.fc1(x))))


tasks = ['L', 'R', 'D']
model = {'rep': Encoder()}
for t in tasks:
    model[t] = nn.Linear(12, 3)
with torch.no_grad():
    for j, m in enumerate(model.values()):
        for p in m.parameters():
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (0.7 + 0.1 * j)).reshape(p.shape) * 0.4)

x = torch.cos(torch.arange(40 * 8, dtype=torch.float32) * 0.3).reshape(40, 8)
labels = {t: (torch.arange(40) * (k + 1)) % 3 for k, t in enumerate(tasks)}
params = []
for m in model:
    params += model[m].parameters()
optimizer = torch.optim.SGD(params, lr=0.05, momentum=0.9)

for step in range(4):
    loss_data = {}
    grads = {}
    scale = {}
    optimizer.zero_grad()
    with torch.no_grad():
        images_volatile = x.detach()
        rep = model['rep'](images_volatile)
    rep_variable = rep.clone().requires_grad_()
    for t in tasks:
        optimizer.zero_grad()
        out_t = model[t](rep_variable)
        loss = F.cross_entropy(out_t, labels[t])
        loss_data[t] = loss.item()
        loss.backward()
        grads[t] = []
        grads[t].append(rep_variable.grad.data.clone().requires_grad_(False))
        rep_variable.grad.data.zero_()
    gn = gradient_normalizers(grads, loss_data, 'loss+')
    for t in tasks:
        for gr_i in range(len(grads[t])):
            grads[t][gr_i] = grads[t][gr_i] / gn[t]
    sol, min_norm = MinNormSolver.find_min_norm_element_FW([grads[t] for t in tasks])
    for i, t in enumerate(tasks):
        scale[t] = float(sol[i])
    optimizer.zero_grad()
    rep = model['rep'](x)
    for i, t in enumerate(tasks):
        out_t = model[t](rep)
        loss_t = F.cross_entropy(out_t, labels[t])
        loss_data[t] = loss_t.item()
        if i > 0:
            loss = loss + scale[t] * loss_t
        else:
            loss = scale[t] * loss_t
    loss.backward()
    optimizer.step()
    print(step, {t: round(loss_data[t], 4) for t in tasks}, {t: round(scale[t], 4) for t in tasks},
          'min_norm=%.5f' % float(min_norm))
print(type(min_norm))
