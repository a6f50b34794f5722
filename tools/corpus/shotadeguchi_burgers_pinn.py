"""A physics-informed network for the viscous Burgers equation, after ShotaDeguchi/PINN_Torch
(00_burgers: parameters.py, preparations.py, icbc.py, activations.py, optimizers.py, pinn.py,
main.py, concatenated in that order).

Adapted: width 2**8 -> 32, 1e5 epochs -> 25, grid 101x201 -> 21x41; the wall-clock prints (start
time, elapsed seconds) and the python/pytorch version prints removed; plotting removed; the Glorot
initialisation draws from numpy instead of torch's generator.  Kept as written: the validation
split that slices an empty range (its loss is the mean of nothing, nan), and
`torch.mean(self.bounds, dim=0).values`, a bound method of a dense tensor that is never called.
"""
import os
import random
import sys
import time

import numpy as np
import torch
from torch import nn

# network structure
f_in  = 2
f_out = 1
width = 2 ** 5   # 2 ** 6 = 64, 2 ** 8 = 256
depth = 5

# training setting
n_epch = 25
n_btch = 2 ** 12   # 2 ** 8 = 256, 2 ** 10 = 1024
c_tol = 1e-8

# initializers
w_init = "Glorot"
b_init = "zeros"
act = "tanh"

# optimization
lr = 5e-4
opt = "Adam"
f_scl = "minmax"   # "minmax" or "mean"

# system params
nu = .01 / np.pi

# weights
w_ini = 1.
w_bnd = 1.
w_pde = 1.

# boundary condition 
bc = "Dir"   # "Dir" for Dirichlet, "Neu" for Neumann

# rarely changed params
f_mntr = 5
r_seed = 0
d_type = torch.float32

def params():

    print(f"r_seed : {r_seed}")
    print(f"d_type : {d_type}")
    os.environ["PYTHONHASHSEED"] = str(r_seed)
    np.random.seed(r_seed)
    random.seed(r_seed)
    torch.manual_seed(r_seed)
    torch.set_default_dtype(d_type)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device: {device}")

    return \
        f_in, f_out, width, depth, \
        w_init, b_init, act, \
        lr, opt, \
        f_scl, nu, \
        w_ini, w_bnd, w_pde, bc, \
        f_mntr, r_seed, d_type, device, \
        n_epch, n_btch, c_tol


def prp_dat():
    # set domain
    xmin, xmax, nx = -1., 1., int(2e1) + 1
    tmin, tmax, nt =  0., 1., int(4e1) + 1
    x = np.linspace(xmin, xmax, nx)
    t = np.linspace(tmin, tmax, nt)
    x, t = np.meshgrid(x, t)
    x, t = x.reshape(-1, 1), t.reshape(-1, 1)
    XT = np.c_[x, t]

    # find lower & upper bound
    lb = [min(XT[:,0]), min(XT[:,1])]
    ub = [max(XT[:,0]), max(XT[:,1])]

    # fraction for training, validation, test set
    frac_trn = .6
    frac_val = .2
    frac_tst = .2

    # initial condition evaluation
    N_ini = nx
    x_ini = np.random.uniform(low=lb[0], high=ub[0], size=N_ini)
    t_ini = lb[1] * np.ones((N_ini))
    XT_ini = np.c_[x_ini, t_ini]
    
    N_ini = XT_ini.shape[0]
    N_ini_trn = int(frac_trn * N_ini)
    N_ini_val = int(frac_val * N_ini)
    N_ini_tst = int(frac_tst * N_ini)

    idx_ini = np.random.choice(N_ini, N_ini, replace=False)
    idx_ini_trn = idx_ini[0:N_ini_trn]
    idx_ini_val = idx_ini[N_ini_trn:N_ini_val]
    idx_ini_tst = idx_ini[N_ini_val:N_ini_tst]

    XT_ini_trn = XT_ini[idx_ini_trn,:]
    XT_ini_val = XT_ini[idx_ini_val,:]
    XT_ini_tst = XT_ini[idx_ini_tst,:]

    # boundary condition evaluation
    N_bnd = nt
    x_lb = lb[0] * np.ones((int(.5 * N_bnd)))
    x_ub = ub[0] * np.ones((int(.5 * N_bnd)))
    x_bnd = np.append(x_lb, x_ub)
    t_bnd = np.random.uniform(low=lb[1], high=ub[1], size=N_bnd-1)
    XT_bnd = np.c_[x_bnd, t_bnd]

    N_bnd = XT_bnd.shape[0]
    N_bnd_trn = int(frac_trn * N_bnd)
    N_bnd_val = int(frac_val * N_bnd)
    N_bnd_tst = int(frac_tst * N_bnd)

    idx_bnd = np.random.choice(N_bnd, N_bnd, replace=False)
    idx_bnd_trn = idx_bnd[0:N_bnd_trn]
    idx_bnd_val = idx_bnd[N_bnd_trn:N_bnd_val]
    idx_bnd_tst = idx_bnd[N_bnd_val:N_bnd_tst]

    XT_bnd_trn = XT_bnd[idx_bnd_trn,:]
    XT_bnd_val = XT_bnd[idx_bnd_val,:]
    XT_bnd_tst = XT_bnd[idx_bnd_tst,:]

    # PDE-residual evaluation
    N_pde = XT.shape[0]
    N_pde_trn = int(frac_trn * N_pde)
    N_pde_val = int(frac_val * N_pde)
    N_pde_tst = int(frac_tst * N_pde)

    idx_pde = np.random.choice(N_pde, N_pde, replace=False)
    idx_pde_trn = idx_pde[0:N_pde_trn]
    idx_pde_val = idx_pde[N_pde_trn:N_pde_val]
    idx_pde_tst = idx_pde[N_pde_val:N_pde_tst]

    XT_pde_trn = XT[idx_pde_trn,:]
    XT_pde_val = XT[idx_pde_val,:]
    XT_pde_tst = XT[idx_pde_tst,:]

    XT_ini_trn, XT_ini_val, XT_ini_tst = torch.from_numpy(XT_ini_trn), \
                                         torch.from_numpy(XT_ini_val), \
                                         torch.from_numpy(XT_ini_tst)
    XT_bnd_trn, XT_bnd_val, XT_bnd_tst = torch.from_numpy(XT_bnd_trn), \
                                         torch.from_numpy(XT_bnd_val), \
                                         torch.from_numpy(XT_bnd_tst)
    XT_pde_trn, XT_pde_val, XT_pde_tst = torch.from_numpy(XT_pde_trn), \
                                         torch.from_numpy(XT_pde_val), \
                                         torch.from_numpy(XT_pde_tst)

    return XT_ini_trn, XT_ini_val, XT_ini_tst, \
            XT_bnd_trn, XT_bnd_val, XT_bnd_tst, \
            XT_pde_trn, XT_pde_val, XT_pde_tst


def initial(x):
    if torch.is_tensor(x) == True:
        pass
    else:
        x = torch.from_numpy(x)
    y = -torch.sin(np.pi * x)
    return y

def boundary(t):
    if torch.is_tensor(t) == True:
        pass
    else:
        t = torch.from_numpy(t)
    y = torch.zeros(size = [t.shape[0]])
    return y


def act_func(
    name
):
    if name == "tanh":
        activation = torch.nn.Tanh()
    elif name == "silu":
        activation = torch.nn.SiLU()
    elif name == "gelu":
        activation = torch.nn.GELU()
    elif name == "mish":
        activation = torch.nn.Mish()
    else:
        raise NotImplementedError(">>>>> act_func")
    return activation


def opt_alg(params, lr, name):
    if name == "SGD":
        optimizer = torch.optim.SGD(
            params, lr=lr, momentum=0, dampening=0, weight_decay=0, nesterov=False
            )
    elif name == "RMSprop":
        optimizer = torch.optim.RMSprop(
            params, lr=lr, alpha=0.99, eps=1e-08, weight_decay=0, momentum=0, centered=False
            )
    elif name == "Adam":
        optimizer = torch.optim.Adam(
            params, lr=lr, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, amsgrad=False
            )
    elif name == "Adamax":
        optimizer = torch.optim.Adamax(
            params, lr=lr, betas=(0.9, 0.999), eps=1e-08, weight_decay=0
            )
    elif name == "Nadam":
        optimizer = torch.optim.NAdam(
            params, lr=lr, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, momentum_decay=0.004
            )
    elif name == "Adamw":
        optimizer = torch.optim.AdamW(
            params, lr=lr, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01, amsgrad=False
            )
    elif name == "Radam":
        optimizer = torch.optim.RAdam(
            params, lr=lr, betas=(0.9, 0.999), eps=1e-08, weight_decay=0
            )
    else:
        raise NotImplementedError(">>>>> opt_alg")
    return optimizer


# from initializers import weight_init, bias_init

class PINN(torch.nn.Module):
    def __init__(
        self, 
        x_ini_trn, t_ini_trn, u_ini_trn, 
        x_bnd_trn, t_bnd_trn, u_bnd_trn, 
        x_pde_trn, t_pde_trn, 
        x_ini_val, t_ini_val, u_ini_val, 
        x_bnd_val, t_bnd_val, u_bnd_val, 
        x_pde_val, t_pde_val, 
        f_in, f_out, width, depth,
        w_init, b_init, act, 
        lr, opt, 
        f_scl, nu, 
        w_ini, w_bnd, w_pde, bc, 
        f_mntr, r_seed, d_type, device
    ):
        # init
        super().__init__()
        self.f_in   = f_in
        self.f_out  = f_out
        self.width  = width
        self.depth  = depth
        self.w_init = w_init
        self.b_init = b_init
        self.act    = act
        self.lr     = lr
        self.opt    = opt
        self.f_scl  = f_scl
        self.f_mntr = f_mntr
        self.r_seed = r_seed
        self.d_type = d_type
        self.device = device
        self.setup(r_seed, d_type)

        # training set
        self.x_ini_trn = x_ini_trn.float().reshape(-1, 1).to(self.device)
        self.t_ini_trn = t_ini_trn.float().reshape(-1, 1).to(self.device)
        self.u_ini_trn = u_ini_trn.float().reshape(-1, 1).to(self.device)
        self.x_bnd_trn = x_bnd_trn.float().reshape(-1, 1).to(self.device)
        self.t_bnd_trn = t_bnd_trn.float().reshape(-1, 1).to(self.device)
        self.u_bnd_trn = u_bnd_trn.float().reshape(-1, 1).to(self.device)
        self.x_pde_trn = x_pde_trn.float().reshape(-1, 1).to(self.device)
        self.t_pde_trn = t_pde_trn.float().reshape(-1, 1).to(self.device)

        # validation set
        self.x_ini_val = x_ini_val.float().reshape(-1, 1).to(self.device)
        self.t_ini_val = t_ini_val.float().reshape(-1, 1).to(self.device)
        self.u_ini_val = u_ini_val.float().reshape(-1, 1).to(self.device)
        self.x_bnd_val = x_bnd_val.float().reshape(-1, 1).to(self.device)
        self.t_bnd_val = t_bnd_val.float().reshape(-1, 1).to(self.device)
        self.u_bnd_val = u_bnd_val.float().reshape(-1, 1).to(self.device)
        self.x_pde_val = x_pde_val.float().reshape(-1, 1).to(self.device)
        self.t_pde_val = t_pde_val.float().reshape(-1, 1).to(self.device)

        # weights
        self.w_ini = w_ini
        self.w_bnd = w_bnd
        self.w_pde = w_pde

        # setup
        self.nu = nu
        self.bc = bc

        # bounds
        self.bounds = torch.cat((self.x_pde_trn, self.t_pde_trn), dim = 1)
        self.lb = torch.min(self.bounds, dim = 0).values.to(self.device)
        self.ub = torch.max(self.bounds, dim = 0).values.to(self.device)
        self.mn = torch.mean(self.bounds, dim = 0).values

        self.arch = [self.f_in] + [self.width] * (self.depth - 1) + [self.f_out]
        self.layers = torch.nn.ModuleList(
            [torch.nn.Linear(self.arch[d], self.arch[d + 1]) for d in range(self.depth)]
            )
        for d in range(0, self.depth):
            # Glorot-normal draws from numpy (the script's torch.nn.init.xavier_normal_), so both
            # libraries start from the same weights
            fan_out, fan_in = self.layers[d].weight.shape
            std = np.sqrt(2. / (fan_in + fan_out))
            self.layers[d].weight.data = torch.tensor(
                np.random.normal(0., std, (fan_out, fan_in)), dtype=torch.float32)
            torch.nn.init.zeros_(self.layers[d].bias.data)

        # self.model = self.dnn_init(self.arch)
        self.activation = act_func(self.act)
        self.optimzer = opt_alg(self.layers.parameters(), self.lr, self.opt)
        self.loss_func = torch.nn.MSELoss(reduction = "mean")
        self.loss_trn_log = []
        self.loss_val_log = []
        self.loss_log_printed = False

        print("\n************************************************************")
        print("****************     MAIN PROGRAM START     ****************")
        print("************************************************************")
        print(">>>>> configuration;")
        print("         r_seed       :", self.r_seed)
        print("         d_type       :", self.d_type)
        print("         weight init  :", self.w_init)
        print("         bias   init  :", self.b_init)
        print("         activation   :", self.act)
        print("         learning rate:", self.lr)
        print("         optimizer    :", self.optimzer)
        print("         layers       :", self.layers)
        
    def setup(
        self, r_seed, d_type
    ):
        os.environ["PYTHONHASHSEED"] = str(r_seed)
        np.random.seed(r_seed)
        random.seed(r_seed)
        torch.manual_seed(r_seed)
        torch.set_default_dtype(d_type)

    def forward(
        self, x
    ):
        # convert to tensor
        if torch.is_tensor(x) == True:
            pass
        else:
            x = torch.from_numpy(x)

        # feature scaling
        x = x.to(self.device)
        if self.f_scl == "minmax":
            z = 2. * (x - self.lb) / (self.ub - self.lb) - 1.
        elif self.f_scl == "mean":
            z = (x - self.mn) / (self.ub - self.lb)
        else:
            raise NotImplementedError(">>>>> forward_pass (f_scl)")

        # forward pass
        for d in range(0, self.depth - 1):
            u = self.layers[d](z)
            z = self.activation(u)
        y = self.layers[-1](z)
        return y

    def loss_ini(
        self, x, y
    ):
        x_ = x.clone()
        x_.requires_grad = False
        y_ = self.forward(x_)
        loss = self.loss_func(y, y_)
        return loss

    def loss_bnd(
        self, x, y
    ):
        if self.bc == "Dir":
            x_ = x.clone()
            x_.requires_grad = True
            y_ = self.forward(x_)
            loss = self.loss_func(y, y_)
        elif self.bc == "Neu":
            x_ = x.clone()
            x_.requires_grad = True
            u = self.forward(x_)
            u_x_t = torch.autograd.grad(u, x_, torch.ones([x.shape[0], 1]).to(self.device), retain_graph=True, create_graph=True)[0]
            u_x   = u_x_t[:,[0]]
            loss = self.loss_func(y, u_x)
        else:
            raise NotImplementedError(">>>>> loss_bnd")
        return loss

    def loss_pde(
        self, x
    ):
        x_ = x.clone()
        x_.requires_grad = True
        u = self.forward(x_)
        u_x_t   = torch.autograd.grad(u,     x_, torch.ones([x.shape[0], 1]).to(self.device), retain_graph=True, create_graph=True)[0]
        u_xx_tt = torch.autograd.grad(u_x_t, x_, torch.ones(x.shape).to(self.device), create_graph=True)[0]
        if not self.loss_log_printed:
            self.loss_log_printed = True
            print("u_x_t:", tuple(u_x_t.shape), u_x_t.dtype, type(u_x_t.grad_fn).__name__,
                  "u_xx_tt:", type(u_xx_tt.grad_fn).__name__, "mn callable:", callable(self.mn))
        u_x  = u_x_t[:,[0]]
        u_t  = u_x_t[:,[1]]
        u_xx = u_xx_tt[:,[0]]
        gveq = u_t + u * u_x - self.nu * u_xx
        _ = torch.zeros_like(gveq)
        loss = self.loss_func(_, gveq)
        return loss

    def loss_glb(
        self, 
        x_ini, t_ini, u_ini, 
        x_bnd, t_bnd, u_bnd, 
        x_pde, t_pde
    ):
        XT_ini = torch.cat((x_ini, t_ini), dim = 1)
        XT_bnd = torch.cat((x_bnd, t_bnd), dim = 1)
        XT_pde = torch.cat((x_pde, t_pde), dim = 1)
        loss_ini = self.loss_ini(XT_ini, u_ini)
        loss_bnd = self.loss_bnd(XT_bnd, u_bnd)
        loss_pde = self.loss_pde(XT_pde)
        loss = self.w_ini * loss_ini \
                + self.w_bnd * loss_bnd \
                + self.w_pde * loss_pde
        return loss

    def train(
        self, epoch = int(1e3), batch = 2 ** 8, tol = 1e-5
    ):
        print("\n************************************************************")
        print("******************     TRAINING START     ******************")
        print("************************************************************")
        t0 = time.time()
        for ep in range(epoch):
            loss_trn = self.loss_glb(
                self.x_ini_trn, self.t_ini_trn, self.u_ini_trn, 
                self.x_bnd_trn, self.t_bnd_trn, self.u_bnd_trn, 
                self.x_pde_trn, self.t_pde_trn
            )
            loss_val = self.loss_glb(
                self.x_ini_val, self.t_ini_val, self.u_ini_val, 
                self.x_bnd_val, self.t_bnd_val, self.u_bnd_val, 
                self.x_pde_val, self.t_pde_val
            )
            self.optimzer.zero_grad()
            loss_trn.backward()
            self.optimzer.step()
            ep_loss_trn = loss_trn.item()
            ep_loss_val = loss_val.item()
            self.loss_trn_log.append(ep_loss_trn)
            self.loss_val_log.append(ep_loss_val)
            if ep % self.f_mntr == 0:
                elps = time.time() - t0
                print("epoch: %d, loss_trn: %.3e, loss_val: %.3e"
                        % (ep, ep_loss_trn, ep_loss_val))
                t0 = time.time()
            if ep_loss_val < tol:
                print(">>>>> program terminating with the loss converging to the tolerance.")
                print("\n************************************************************")
                print("*******************     TRAINING END     *******************")
                print("************************************************************")
                break
        print("\n************************************************************")
        print("*******************     TRAINING END     *******************")
        print("************************************************************")

    def infer(
        self, x
    ):
        # x = x.to(self.device)
        u_ = self.forward(x)
        u_ = u_.cpu().detach().numpy()
        return u_


def main():
    f_in, f_out, width, depth, \
    w_init, b_init, act, \
    lr, opt, \
    f_scl, nu, \
    w_ini, w_bnd, w_pde, bc, \
    f_mntr, r_seed, d_type, device, \
    n_epch, n_btch, c_tol = params()

    XT_ini_trn, XT_ini_val, XT_ini_tst, \
    XT_bnd_trn, XT_bnd_val, XT_bnd_tst, \
    XT_pde_trn, XT_pde_val, XT_pde_tst = prp_dat()

    # training set
    u_ini_trn = initial(XT_ini_trn[:,0])
    u_bnd_trn = boundary(XT_bnd_trn[:,1])

    # validation set
    u_ini_val = initial(XT_ini_val[:,0])
    u_bnd_val = boundary(XT_bnd_val[:,1])
    
    pinn = PINN(
        XT_ini_trn[:,0], XT_ini_trn[:,1], u_ini_trn, 
        XT_bnd_trn[:,0], XT_bnd_trn[:,1], u_bnd_trn, 
        XT_pde_trn[:,0], XT_pde_trn[:,1], 
        XT_ini_val[:,0], XT_ini_val[:,1], u_ini_val, 
        XT_bnd_val[:,0], XT_bnd_val[:,1], u_bnd_val, 
        XT_pde_val[:,0], XT_pde_val[:,1], 
        f_in, f_out, width, depth,
        w_init, b_init, act, 
        lr, opt, 
        f_scl, nu, 
        w_ini, w_bnd, w_pde, bc, 
        f_mntr, r_seed, d_type, device
    )
    pinn.to(device)
    pinn.train(epoch = n_epch, batch = n_btch, tol = c_tol)


    nx, nt = 101, 101
    x, t = np.linspace(-1, 1, nx), np.linspace(0, 1, nt)
    X, T = np.meshgrid(x, t)
    X, T = X.reshape(-1, 1), T.reshape(-1, 1)
    XT = np.hstack((X, T)).astype(np.float32)
    u_ = pinn.infer(XT)
    u_ = np.reshape(u_, (nx, nt))
    print(u_.dtype, u_.shape, np.round(u_[::50, ::50], 5))
    print(len(pinn.loss_trn_log), pinn.loss_val_log[:3])

    x_eval = np.ravel(X.T).reshape(-1, 1)
    t_eval = np.ravel(T.T).reshape(-1, 1)
    xmax = np.max(x_eval)
    tmax = np.max(t_eval)


if __name__ == "__main__":
    main()
