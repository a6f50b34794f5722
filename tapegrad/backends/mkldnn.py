"""tapegrad.backends.mkldnn: tapegrad is not built with oneDNN (MKL-DNN); its `enabled` flag
exists and is remembered, with no effect, as cudnn's."""
from ._flags import check_flags


def is_available() -> bool:
    """Always False: tapegrad is not built with oneDNN."""
    return False


_FLAGS = {"enabled": "set_enabled_mkldnn", "deterministic": "set_deterministic_mkldnn"}
enabled = True
deterministic = False

check_flags(__name__)
