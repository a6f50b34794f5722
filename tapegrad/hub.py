"""tapegrad.hub: torch.hub's entry points.  Models are loaded from a LOCAL directory holding a
`hubconf.py` (`load(dir, name, source="local")`), as torch does; fetching repositories from
GitHub or weights from URLs is not supported (tapegrad does no network access), and says so."""
from __future__ import annotations as _annotations

import importlib.util
import os
import re
import sys
from urllib.parse import urlparse  # noqa: F401 - torch.hub's namespace has it (timm imports it)

__all__ = ["load", "list", "help", "get_dir", "set_dir", "load_state_dict_from_url",
           "download_url_to_file"]

_hub_dir = None
# the hash prefix in a checkpoint's file name ("resnet18-f37072fd.pth"), as torch.hub names it
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_NO_NETWORK = ("tapegrad.hub: {what} needs network access, which tapegrad does not do; "
               "download the repository / file yourself and use "
               "tapegrad.hub.load(<directory>, <model>, source='local') or tapegrad.load(<file>)")


def get_dir() -> str:
    """The hub cache directory: set_dir's, else $TORCH_HOME/hub, else
    $XDG_CACHE_HOME/torch/hub (~/.cache/torch/hub), as torch chooses it."""
    if _hub_dir is not None:
        return _hub_dir
    torch_home = os.path.expanduser(os.getenv(
        "TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")))
    return os.path.join(torch_home, "hub")


def set_dir(d) -> None:
    """Use ``d`` as the hub cache directory (``~`` is expanded)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def _load_hubconf(repo_dir):
    path = os.path.join(repo_dir, "hubconf.py")
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_dir)       # hubconf imports its repository's own modules
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    return module


def _entrypoint(hubconf, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    function = getattr(hubconf, model, None)
    if function is None or not callable(function):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return function


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Call entry point ``model`` of the ``hubconf.py`` in directory ``repo_or_dir`` with
    ``*args, **kwargs`` (``source="local"``).  ``source="github"`` raises RuntimeError: tapegrad
    does not download repositories."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        raise RuntimeError(_NO_NETWORK.format(what=f"loading '{repo_or_dir}' from GitHub"))
    return _entrypoint(_load_hubconf(repo_or_dir), model)(*args, **kwargs)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """torch.hub.list reads a GitHub repository: not supported (RuntimeError)."""
    raise RuntimeError(_NO_NETWORK.format(what=f"listing '{github}'"))


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """torch.hub.help reads a GitHub repository: not supported (RuntimeError)."""
    raise RuntimeError(_NO_NETWORK.format(what=f"reading '{github}'"))


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Downloading is not supported (RuntimeError)."""
    raise RuntimeError(_NO_NETWORK.format(what=f"downloading '{url}'"))


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """Load a checkpoint already in the cache (``<get_dir()>/checkpoints/<file name>``, or
    ``model_dir``) with tapegrad.load; a file that would have to be downloaded raises
    RuntimeError."""
    from .serialization import load as load_file
    directory = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    name = file_name or os.path.basename(url.split("?")[0])
    cached = os.path.join(directory, name)
    if not os.path.exists(cached):
        raise RuntimeError(_NO_NETWORK.format(what=f"downloading '{url}' (not in {directory})"))
    return load_file(cached, map_location=map_location, weights_only=weights_only)
