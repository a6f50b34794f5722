"""tapegrad.random: torch.random's names (Generator, the global default generator and its seeding
functions).  The generators and every sampling function live in tapegrad._random; this module
shows only torch.random's surface, so that a script's dir(torch.random), hasattr and
`from torch.random import *` see what they see under PyTorch."""
from ._random import (Generator, default_generator, fork_rng, get_rng_state,  # noqa: F401
                      initial_seed, manual_seed, seed, set_rng_state)

# torch.random's __all__: `from torch.random import *` binds neither Generator nor
# default_generator
__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]
