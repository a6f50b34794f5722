"""torch.cuda.random: the (absent) CUDA generators' functions, the same objects as torch.cuda's
(torchattacks' APGD seeds through torch.cuda.random.manual_seed)."""
from . import (get_rng_state, get_rng_state_all, initial_seed, manual_seed,  # noqa: F401
               manual_seed_all, seed, seed_all, set_rng_state)
