"""A fully-connected GAN on MNIST-shaped images with argparse options, logging, MLPs built from a
layer list, nn.init.kaiming_uniform through Module.apply, Module.type(torch.FloatTensor), a
hand-written numerically stable BCE-with-logits, Adam for both players, evaluation under no_grad
(with the script's own (B,1)-vs-(B,) label broadcast), and checkpoints (state dicts of both models
and optimizers, losses as tensors) saved every epoch and resumed by a second run that picks the
last checkpoint from the directory listing.

Source: miladbohlouli/Pytorch-Tutorials, Advanced/GAN_gpu.py.  Adapted: tensorboard writers
removed; MNIST replaced by numpy-drawn images of the same shape; noise drawn from numpy and the
parameters overwritten from numpy after the script's own init, so the run is deterministic; the
checkpoint directory is temporary; np.int (removed from numpy) written as int; the log goes to
stdout; the driver runs main() twice to exercise the resume path.
"""
import argparse
import logging
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s:%(message)s")
logger = logging.getLogger(__name__)
rng = np.random.RandomState(0)

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", default=32, type=int)
parser.add_argument("--image_size", default=28 * 28, type=int)
parser.add_argument("--noise_size", default=16, type=int)
parser.add_argument("--iterations", default=2, type=int)
parser.add_argument("--use_gpu", default=False, type=bool)
parser.add_argument("--model_dir", default="./save", type=str)
parser.add_argument("--loading_strategy", default="last", type=str)
parser.add_argument("--save_every_d_epochs", default=1, type=int)
parser.add_argument("--ignore_first_iterations", default=0, type=int)
parser.add_argument("--generator_structure", default=[16, 64, 28 * 28], type=list)
parser.add_argument("--generator_activation", default="Relu", type=str)
parser.add_argument("--generator_dropout", default=0.0, type=float)
parser.add_argument("--g_steps", default=1, type=int)
parser.add_argument("--g_lr", default=0.002, type=float)
parser.add_argument("--disc_structure", default=[28 * 28, 64, 32], type=list)
parser.add_argument("--disc_activation", default="LeakyRelu", type=str)
parser.add_argument("--disc_dropout", default=0.0, type=float)
parser.add_argument("--d_steps", default=1, type=int)
parser.add_argument("--d_lr", default=0.0002, type=float)


def make_mlp(layers, activation="Relu", dropout=0.0):
    nn_layers = []
    for dim_in, dim_out in zip(layers[:-1], layers[1:]):
        nn_layers.append(nn.Linear(dim_in, dim_out))
        if activation == "Relu":
            nn_layers.append(nn.ReLU())
        elif activation == "LeakyRelu":
            nn_layers.append(nn.LeakyReLU())
        if dropout > 0:
            nn_layers.append(nn.Dropout(p=dropout))
    return nn.Sequential(*nn_layers)


def init_weights(m):
    if m.__class__.__name__ == "Linear":
        nn.init.kaiming_uniform(m.weight)


def overwrite_from_numpy(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy((rng.randn(*p.shape) * 0.05).astype(np.float32)))


def noise(n, size):
    return torch.from_numpy(rng.randn(n, size).astype(np.float32))


def bce_loss(input, target):
    neg_abs = -input.abs()
    loss = input.clamp(min=0) - input * target + (1 + neg_abs.exp()).log()
    return loss.mean()


def get_tensor_type(args):
    if args.use_gpu:
        return torch.cuda.FloatTensor
    else:
        return torch.FloatTensor


def checkpoint_path(args):
    try:
        directories = os.listdir(args.model_dir)
    except OSError:
        os.makedirs(args.model_dir)
        return None
    processed_path = dict()
    processed_path["checkpoint"] = []
    for dir in directories:
        if "best" in dir:
            processed_path["best"] = dir
        elif "checkpoint" in dir:
            processed_path["checkpoint"].append(tuple((dir.split(sep="-")[1].split(sep=".")[0], dir)))
    if len(processed_path["checkpoint"]) == 0 and "best" not in processed_path:
        return None
    elif args.loading_strategy == "best":
        return os.path.join(args.model_dir, processed_path["best"])
    elif args.loading_strategy == "last":
        directories_list = np.asarray(processed_path["checkpoint"], dtype=object)
        return os.path.join(args.model_dir, directories_list[directories_list[:, 0].astype(int).argmax(), 1])


class Generator(nn.Module):
    def __init__(self, args):
        super(Generator, self).__init__()
        self.args = args
        assert args.generator_structure[0] == args.noise_size
        assert args.generator_structure[-1] == args.image_size
        self.generator_model = make_mlp(layers=args.generator_structure,
                                        activation=args.generator_activation,
                                        dropout=args.generator_dropout)

    def forward(self, noise):
        return self.generator_model(noise)


class Discriminator(nn.Module):
    def __init__(self, args):
        super(Discriminator, self).__init__()
        self.args = args
        assert args.disc_structure[0] == args.image_size
        self.discriminator_model = make_mlp(layers=args.disc_structure,
                                            activation=args.disc_activation,
                                            dropout=args.disc_dropout)
        self.linear_out = nn.Linear(args.disc_structure[-1], 1)

    def forward(self, images):
        return self.linear_out(self.discriminator_model(images))


def image_loader(n, batch_size, seed):
    images = np.random.RandomState(seed).randint(0, 256, (n, 1, 28, 28)).astype(np.float32) / 255.0
    return DataLoader(TensorDataset(torch.from_numpy(images), torch.zeros(n, dtype=torch.long)),
                      batch_size=batch_size, shuffle=False)


def main(args):
    train_loader = image_loader(96, args.batch_size, 1)
    test_loader = image_loader(40, args.batch_size, 2)

    logger.info("Here is the generator")
    g = Generator(args)
    logger.info(g)
    logger.info("Here is the discriminator")
    d = Discriminator(args)
    logger.info(d)

    g.apply(init_weights)
    d.apply(init_weights)
    overwrite_from_numpy(g)
    overwrite_from_numpy(d)

    tensor_type = get_tensor_type(args)
    g.type(tensor_type).train()
    d.type(tensor_type).train()

    d_optimizer = torch.optim.Adam(d.parameters(), lr=args.d_lr)
    g_optimizer = torch.optim.Adam(g.parameters(), lr=args.g_lr)

    loading_path = checkpoint_path(args)
    if loading_path is not None:
        logger.info(f"Loading the model in {os.path.basename(loading_path)}...")
        loaded_dictionary = torch.load(loading_path)
        g.load_state_dict(loaded_dictionary["generator"])
        d.load_state_dict(loaded_dictionary["discriminator"])
        g_optimizer.load_state_dict(loaded_dictionary["g_optimizer"])
        d_optimizer.load_state_dict(loaded_dictionary["d_optimizer"])
        start_epoch = loaded_dictionary["epoch"] + 1
        step = loaded_dictionary["step"]
        best_validation_loss = loaded_dictionary["best_validation_loss"]
        g_loss = loaded_dictionary["current_g_loss"]
        d_loss = loaded_dictionary["current_d_loss"]
        logger.info(f"resumed at epoch {start_epoch}, step {step}, d_loss {d_loss}, "
                    f"Adam step {d_optimizer.state_dict()['state'][0]['step']}")
    else:
        logger.info("No saved checkpoint, Initializing...")
        step = 0
        start_epoch = 0
        best_validation_loss = np.inf
        d_loss = np.inf
        g_loss = np.inf

    for i in range(start_epoch, start_epoch + args.iterations):
        g.train()
        d.train()
        for x_train, _ in train_loader:
            d_steps_left = args.d_steps
            g_steps_left = args.g_steps
            true_labels = torch.ones(x_train.shape[0], 1)
            fake_labels = torch.zeros(x_train.shape[0], 1)
            while d_steps_left > 0:
                noise_tensor = noise(x_train.shape[0], args.noise_size)
                x_train = x_train.reshape(-1, args.image_size)
                real_loss = bce_loss(d(x_train), true_labels)
                fake_loss = bce_loss(d(g(noise_tensor)), fake_labels)
                d_loss = fake_loss + real_loss
                d_optimizer.zero_grad()
                d_loss.backward()
                d_optimizer.step()
                d_steps_left -= 1
            while g_steps_left > 0:
                noise_tensor = noise(x_train.shape[0], args.noise_size)
                g_loss = bce_loss(d(g(noise_tensor)), true_labels)
                g_optimizer.zero_grad()
                g_loss.backward()
                g_optimizer.step()
                g_steps_left -= 1
            step += 1
        logger.info(f"TRAINING[{i + 1}/{start_epoch + args.iterations}]\td_loss:{d_loss:.4f}\tg_loss:{g_loss:.4f}")

        with torch.no_grad():
            g.eval()
            d.eval()
            for x_test, _ in test_loader:
                fake_labels = torch.zeros(x_train.shape[0])
                true_labels = torch.ones(x_train.shape[0])
                fake_scores = d(g(noise(x_train.shape[0], args.noise_size)))
                fake_loss = bce_loss(fake_scores, fake_labels)
                true_scores = d(x_test.reshape(-1, args.image_size))
                true_loss = bce_loss(true_scores, true_labels[:true_scores.shape[0]])
                validation_d_loss = true_loss + fake_loss
                validation_g_loss = bce_loss(d(g(noise(x_train.shape[0], args.noise_size))), true_labels)
                total_validation_loss = validation_d_loss + validation_g_loss
            logger.info(f"VALIDATING\ttotal evaluation loss:"
                        f"{total_validation_loss:.4f}\tg_loss:{validation_g_loss:.4f}\td_loss:{validation_d_loss:.4f}")

        total_validation_loss = total_validation_loss.item()
        if total_validation_loss <= best_validation_loss or \
                (i + 1) % args.save_every_d_epochs == 0 or \
                (i + 1) == start_epoch + args.iterations:
            logger.info("Saving the model....")
            checkpoint = {
                "epoch": i,
                "step": step,
                "generator": g.state_dict(),
                "discriminator": d.state_dict(),
                "g_optimizer": g_optimizer.state_dict(),
                "d_optimizer": d_optimizer.state_dict(),
                "best_validation_loss": best_validation_loss,
                "current_d_loss": d_loss,
                "current_g_loss": g_loss,
                "total_validation_loss": total_validation_loss,
            }
            if total_validation_loss <= best_validation_loss and i > args.ignore_first_iterations:
                best_validation_loss = total_validation_loss
                torch.save(checkpoint, args.model_dir + "/best.pt")
            if (i + 1) % args.save_every_d_epochs == 0 or (i + 1) == start_epoch + args.iterations:
                torch.save(checkpoint, args.model_dir + "/checkpoint-" + str(i + 1) + ".pt")


if __name__ == '__main__':
    model_dir = tempfile.mkdtemp()
    try:
        args = parser.parse_args(["--model_dir", os.path.join(model_dir, "save")])
        main(args)
        print(sorted(os.listdir(args.model_dir)))
        main(args)
        print(sorted(os.listdir(args.model_dir)))
    finally:
        shutil.rmtree(model_dir)
