"""Hidden-Hyperparameter/CS285_homework hw3 (Berkeley CS285 Deep RL homework, soft actor-critic):
cs285/infrastructure/{pytorch_util,distributions}.py, networks/{mlp_policy,
state_action_value_critic}.py and agents/soft_actor_critic.py. The actor's tanh-squashed
Normal (Independent(TransformedDistribution(Normal, TanhTransform(cache_size=1)))), a critic
ensemble with target networks and Polyak averaging, the q-backup strategies ("mean", "doubleq"
built with empty_like and slice assignment, "min"), the REINFORCE and reparametrized actor
losses with an entropy bonus, ConstantLR schedulers, and the agent's `print(self.__dict__)`.

Adapted: gym environment replaced by synthetic numpy batches; parameters drawn from numpy;
Normal.rsample/sample take their noise from the same numpy stream (the script's random draws);
the agent's __dict__ print reduced to its keys (the full print shows object addresses);
3 updates per configuration.
"""
import numpy as np
import torch
import torch.distributions as D
from torch import nn

rng = np.random.RandomState(0)


def _rsample(self, sample_shape=torch.Size()):
    shape = self._extended_shape(sample_shape)
    eps = torch.from_numpy(rng.standard_normal(tuple(shape)).astype(np.float32))
    return self.loc + eps * self.scale


D.Normal.rsample = _rsample
D.Normal.sample = lambda self, sample_shape=torch.Size(): _rsample(self, sample_shape).detach()

device = torch.device("cpu")
addition_args = {"bird method": False}
_str_to_activation = {"relu": nn.ReLU(), "tanh": nn.Tanh(), "identity": nn.Identity()}


def build_mlp(input_size, output_size, n_layers, size, activation="tanh",
              output_activation="identity"):
    activation = _str_to_activation[activation]
    output_activation = _str_to_activation[output_activation]
    layers = []
    in_size = input_size
    for _ in range(n_layers):
        layers.append(nn.Linear(in_size, size))
        layers.append(activation)
        in_size = size
    layers.append(nn.Linear(in_size, output_size))
    layers.append(output_activation)
    mlp = nn.Sequential(*layers)
    mlp.to(device)
    return mlp


def from_numpy(data):
    data = torch.from_numpy(data)
    if data.dtype == torch.float64:
        data = data.float()
    return data.to(device)


def to_numpy(tensor):
    return tensor.to("cpu").detach().numpy()


def make_tanh_transformed(mean, std):
    if isinstance(std, float):
        std = torch.tensor(std, device=mean.device)
    if std.shape == ():
        std = std.expand(mean.shape)
    return D.Independent(D.TransformedDistribution(base_distribution=D.Normal(mean, std),
                                                   transforms=[D.TanhTransform(cache_size=1)]),
                         reinterpreted_batch_ndims=1)


class MLPPolicy(nn.Module):
    def __init__(self, ac_dim, ob_dim, n_layers, layer_size):
        super().__init__()
        self.net = build_mlp(ob_dim, 2 * ac_dim, n_layers, layer_size).to(device)

    def forward(self, obs):
        mean, std = torch.chunk(self.net(obs), 2, dim=-1)
        std = torch.nn.functional.softplus(std) + 1e-2
        return make_tanh_transformed(mean, std)


class StateActionCritic(nn.Module):
    def __init__(self, ob_dim, ac_dim, n_layers, size):
        super().__init__()
        self.net = build_mlp(ob_dim + ac_dim, 1, n_layers, size).to(device)

    def forward(self, obs, acs):
        return self.net(torch.cat([obs, acs], dim=-1)).squeeze(-1)


class SoftActorCritic(nn.Module):
    def __init__(self, observation_shape, action_dim, make_actor, make_critic, discount,
                 soft_target_update_rate, actor_gradient_type, num_actor_samples,
                 num_critic_networks, target_critic_backup_type, temperature):
        super().__init__()
        self.actor = make_actor(observation_shape, action_dim)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-3)
        self.actor_lr_scheduler = torch.optim.lr_scheduler.ConstantLR(self.actor_optimizer,
                                                                      factor=1.0)
        self.critics = nn.ModuleList([make_critic(observation_shape, action_dim)
                                      for _ in range(num_critic_networks)])
        self.critic_optimizer = torch.optim.Adam(self.critics.parameters(), lr=3e-3)
        self.critic_lr_scheduler = torch.optim.lr_scheduler.ConstantLR(self.critic_optimizer,
                                                                       factor=1.0)
        self.target_critics = nn.ModuleList([make_critic(observation_shape, action_dim)
                                             for _ in range(num_critic_networks)])
        self.observation_shape = observation_shape
        self.action_dim = action_dim
        self.discount = discount
        self.target_critic_backup_type = target_critic_backup_type
        self.num_critic_networks = num_critic_networks
        self.temperature = temperature
        self.actor_gradient_type = actor_gradient_type
        self.num_actor_samples = num_actor_samples
        self.soft_target_update_rate = soft_target_update_rate
        self.critic_loss = nn.MSELoss()
        self.soft_update_target_critic(1.0)
        print("agent info:")
        print(list(self.__dict__))

    def get_action(self, observation):
        with torch.no_grad():
            observation = from_numpy(observation)[None]
            action = self.actor(observation).sample()
            assert action.shape == (1, self.action_dim), action.shape
            return to_numpy(action).squeeze(0)

    def critic(self, obs, action):
        return torch.stack([critic(obs, action) for critic in self.critics], dim=0)

    def target_critic(self, obs, action):
        return torch.stack([critic(obs, action) for critic in self.target_critics], dim=0)

    def q_backup_strategy(self, next_qs):
        num_critic_networks, batch_size = next_qs.shape
        if self.target_critic_backup_type == "doubleq":
            tmp = torch.empty_like(next_qs)
            tmp[1:, :] = next_qs[:-1, :]
            tmp[0, :] = next_qs[-1, :]
            next_qs = tmp
        elif self.target_critic_backup_type == "min":
            next_qs = next_qs.min(dim=0).values
        elif self.target_critic_backup_type == "mean":
            next_qs = next_qs.mean(dim=0)
        if next_qs.shape == (batch_size,):
            next_qs = next_qs[None].expand((self.num_critic_networks, batch_size)).contiguous()
        return next_qs

    def entropy(self, action_distribution):
        actions = action_distribution.rsample([self.num_actor_samples])
        return -torch.mean(action_distribution.log_prob(actions))

    def update_critic(self, obs, action, reward, next_obs, done):
        with torch.no_grad():
            next_action_distribution = self.actor(next_obs)
            next_action = next_action_distribution.sample()
            next_qs = self.q_backup_strategy(self.target_critic(next_obs, next_action))
            next_qs += self.entropy(next_action_distribution) * self.temperature
            target_values = reward + self.discount * next_qs * (1 - done.float())
        q_values = self.critic(obs, action)
        loss = torch.nn.functional.mse_loss(q_values, target_values)
        self.critic_optimizer.zero_grad()
        loss.backward()
        self.critic_optimizer.step()
        return {"critic_loss": loss.item(), "q_values": q_values.mean().item(),
                "target_values": target_values.mean().item()}

    def actor_loss_reinforce(self, obs):
        action_distribution = self.actor(obs)
        with torch.no_grad():
            action = action_distribution.sample([self.num_actor_samples])
            q_values = self.target_critic(torch.tile(obs, dims=(self.num_actor_samples, 1, 1)),
                                          action)
            advantage = torch.mean(q_values, axis=0)
        log_probs = action_distribution.log_prob(action)
        loss = -torch.mean(log_probs * advantage)
        return loss, torch.mean(self.entropy(action_distribution))

    def actor_loss_reparametrize(self, obs):
        action_distribution = self.actor(obs)
        action = action_distribution.rsample([self.num_actor_samples])
        q_values = self.target_critic(torch.tile(obs, dims=(self.num_actor_samples, 1, 1)),
                                      action)
        return -torch.mean(q_values), torch.mean(self.entropy(action_distribution))

    def update_actor(self, obs):
        if self.actor_gradient_type == "reparametrize":
            loss, entropy = self.actor_loss_reparametrize(obs)
        else:
            loss, entropy = self.actor_loss_reinforce(obs)
        loss -= self.temperature * entropy
        self.actor_optimizer.zero_grad()
        loss.backward()
        self.actor_optimizer.step()
        return {"actor_loss": loss.item(), "entropy": entropy.item()}

    def soft_update_target_critic(self, tau):
        for target_critic, critic in zip(self.target_critics, self.critics):
            for target_param, param in zip(target_critic.parameters(), critic.parameters()):
                target_param.data.copy_(target_param.data * (1.0 - tau) + param.data * tau)

    def update(self, observations, actions, rewards, next_observations, dones, step):
        critic_info = self.update_critic(observations, actions, rewards, next_observations,
                                         dones)
        actor_info = self.update_actor(observations)
        self.soft_update_target_critic(self.soft_target_update_rate)
        self.actor_lr_scheduler.step()
        self.critic_lr_scheduler.step()
        return {**actor_info, **critic_info,
                "actor_lr": self.actor_lr_scheduler.get_last_lr()[0],
                "critic_lr": self.critic_lr_scheduler.get_last_lr()[0]}


def np_init(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
    return module


ob_dim, ac_dim, B = 5, 2, 16
for backup, grad_type, ncrit in [("mean", "reinforce", 1), ("doubleq", "reparametrize", 2),
                                 ("min", "reparametrize", 2)]:
    agent = SoftActorCritic(
        (ob_dim,), ac_dim,
        make_actor=lambda obs_shape, a: np_init(MLPPolicy(a, obs_shape[0], 2, 16)),
        make_critic=lambda obs_shape, a: np_init(StateActionCritic(obs_shape[0], a, 2, 16)),
        discount=0.99, soft_target_update_rate=0.005, actor_gradient_type=grad_type,
        num_actor_samples=3, num_critic_networks=ncrit, target_critic_backup_type=backup,
        temperature=0.1)
    print(list(agent.actor_optimizer.__dict__)[:4])
    obs = torch.from_numpy(rng.standard_normal((B, ob_dim)).astype(np.float32))
    acts = torch.from_numpy(rng.uniform(-1, 1, (B, ac_dim)).astype(np.float32))
    rew = torch.from_numpy(rng.standard_normal(B).astype(np.float32))
    nobs = torch.from_numpy(rng.standard_normal((B, ob_dim)).astype(np.float32))
    done = torch.from_numpy(rng.rand(B) < 0.2)
    for step in range(3):
        info = agent.update(obs, acts, rew, nobs, done, step)
        print(backup, grad_type, step, {k: round(float(v), 4) for k, v in sorted(info.items())})
    a = agent.get_action(rng.standard_normal(ob_dim).astype(np.float32))
    print("action", a.shape, a.dtype, np.round(a, 4))
    dist = agent.actor(obs[:2])
    print(type(dist).__name__, dist.batch_shape, dist.event_shape,
          type(dist.base_dist).__name__, dist.base_dist.transforms)
    lp = dist.log_prob(dist.rsample())
    print("log_prob", lp.shape, lp.grad_fn is not None)
    print(sorted(agent.state_dict())[:3], len(agent.state_dict()))
