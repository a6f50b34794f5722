"""torch.utils.collect_env: the environment report bug templates ask for
(``python -m torch.utils.collect_env``), with tapegrad's facts: its version, the OS, compilers,
Python, the CPU (lscpu) and the installed packages that matter.  There is no GPU support, so
every GPU field says so."""
from __future__ import annotations as _annotations

import locale
import os
import platform
import re
import subprocess
import sys
from collections import namedtuple

__all__ = ["SystemEnv", "get_env_info", "get_pretty_env_info", "main", "run"]

SystemEnv = namedtuple("SystemEnv", [
    "torch_version", "is_debug_build", "cuda_compiled_version", "gcc_version", "clang_version",
    "cmake_version", "os", "libc_version", "python_version", "python_platform",
    "is_cuda_available", "cuda_runtime_version", "cuda_module_loading", "nvidia_driver_version",
    "nvidia_gpu_models", "cudnn_version", "is_xpu_available", "pip_version", "pip_packages",
    "conda_packages", "hip_compiled_version", "hip_runtime_version", "miopen_runtime_version",
    "caching_allocator_config", "is_xnnpack_available", "cpu_info"])

_NOT_COLLECTED = "Could not collect"

# The packages whose versions a report lists (pip list's lines matching any).
_RELEVANT = ("torch", "numpy", "tapegrad", "cython", "scipy", "mypy", "flake8", "onnx", "triton",
             "optree")


def run(command):
    """(return code, stdout, stderr) of a shell command; code -1 when it cannot run."""
    try:
        done = subprocess.run(command, shell=isinstance(command, str), capture_output=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError):
        return -1, "", ""
    encoding = locale.getpreferredencoding() or "utf-8"
    return (done.returncode, done.stdout.decode(encoding, "replace").strip(),
            done.stderr.decode(encoding, "replace").strip())


def _first_line_matching(command, pattern):
    code, out, _ = run(command)
    if code != 0:
        return None
    match = re.search(pattern, out)
    return match.group(1) if match else None


def _os_name():
    system = platform.system()
    if system == "Linux":
        try:
            with open("/etc/os-release") as f:
                fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
            return f"{fields['PRETTY_NAME'].strip(chr(34))} ({platform.machine()})"
        except (OSError, KeyError, ValueError):
            return f"{platform.system()} {platform.release()} ({platform.machine()})"
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]} ({platform.machine()})"
    if system == "Windows":
        return f"Microsoft Windows {platform.release()} ({platform.machine()})"
    return system or _NOT_COLLECTED


def _cpu_info():
    if platform.system() == "Linux":
        code, out, _ = run(["lscpu"])
        if code == 0:
            return out
    return platform.processor() or _NOT_COLLECTED


def _pip_packages():
    code, out, _ = run([sys.executable, "-m", "pip", "list", "--format=freeze",
                        "--disable-pip-version-check"])
    if code != 0:
        return "pip3", None
    lines = [line for line in out.splitlines()
             if any(name in line.lower() for name in _RELEVANT)]
    return "pip3", "\n".join(f"[pip3] {line}" for line in lines)


def get_env_info():
    """The report's fields as a SystemEnv."""
    from .. import __version__
    pip_version, pip_packages = _pip_packages()
    libc = "-".join(platform.libc_ver()) if platform.system() == "Linux" else "N/A"
    bits = sys.maxsize.bit_length() + 1
    return SystemEnv(
        torch_version=__version__, is_debug_build=False, cuda_compiled_version=None,
        gcc_version=_first_line_matching("gcc --version", r"gcc (.*)"),
        clang_version=_first_line_matching("clang --version", r"clang version (.*)"),
        cmake_version=_first_line_matching("cmake --version", r"cmake (.*)"),
        os=_os_name(), libc_version=libc or "N/A",
        python_version=f"{sys.version.replace(chr(10), ' ')} ({bits}-bit runtime)",
        python_platform=platform.platform(), is_cuda_available=False,
        cuda_runtime_version=None, cuda_module_loading="N/A", nvidia_driver_version=None,
        nvidia_gpu_models=None, cudnn_version=None, is_xpu_available=False,
        pip_version=pip_version, pip_packages=pip_packages, conda_packages=None,
        hip_compiled_version="N/A", hip_runtime_version="N/A", miopen_runtime_version="N/A",
        caching_allocator_config=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "N/A") or "N/A",
        is_xnnpack_available=False, cpu_info=_cpu_info())


_FORMAT = """PyTorch version: {torch_version}
Is debug build: {is_debug_build}
CUDA used to build PyTorch: {cuda_compiled_version}
ROCM used to build PyTorch: {hip_compiled_version}

OS: {os}
GCC version: {gcc_version}
Clang version: {clang_version}
CMake version: {cmake_version}
Libc version: {libc_version}

Python version: {python_version}
Python platform: {python_platform}
Is CUDA available: {is_cuda_available}
CUDA runtime version: {cuda_runtime_version}
CUDA_MODULE_LOADING set to: {cuda_module_loading}
GPU models and configuration: {nvidia_gpu_models}
Nvidia driver version: {nvidia_driver_version}
cuDNN version: {cudnn_version}
Is XPU available: {is_xpu_available}
HIP runtime version: {hip_runtime_version}
MIOpen runtime version: {miopen_runtime_version}
Is XNNPACK available: {is_xnnpack_available}
Caching allocator config: {caching_allocator_config}

CPU:
{cpu_info}

Versions of relevant libraries:
{pip_packages}
{conda_packages}""".strip()


def get_pretty_env_info():
    """The report as text (a field that could not be collected says so)."""
    fields = get_env_info()._asdict()
    for key, value in fields.items():
        if value is None:
            fields[key] = _NOT_COLLECTED
    if fields["conda_packages"] == _NOT_COLLECTED:
        fields["conda_packages"] = ""
    return _FORMAT.format(**fields).rstrip() + "\n"


def main():
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
