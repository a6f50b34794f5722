"""torch.xpu.random: the (absent) XPU generators' functions, the same objects as torch.xpu's."""
from . import (get_rng_state, get_rng_state_all, initial_seed, manual_seed,  # noqa: F401
               manual_seed_all, seed, seed_all, set_rng_state, set_rng_state_all)
