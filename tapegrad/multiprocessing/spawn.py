"""torch.multiprocessing.spawn / start_processes: run fn(i, *args) in nprocs new processes
(i = 0..nprocs-1), join them, and raise in the parent what a child raised or how it exited."""
from __future__ import annotations as _annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    """A child process failed: error_index is its i, error_pid its process id."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A child raised: the message carries its traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A child exited with a non-zero code (or was killed by a signal) without raising."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    # In the child: run fn and hand a traceback to the parent if it raises.
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes start_processes started; join() waits for them (see join)."""

    def __init__(self, processes, error_queues):
        self.error_queues = error_queues
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self):
        return [int(process.pid) for process in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: until one changes): True once every process has
        ended successfully, False while some still run.  A failed process makes the others
        terminate and raises ProcessRaisedException (it raised) or ProcessExitedException."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        # One failed: stop the others, then say why it failed.
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()
        failed = self.processes[error_index]
        if self.error_queues[error_index].empty():
            exit_code = failed.exitcode
            if exit_code < 0:
                name = signal.Signals(-exit_code).name
                raise ProcessExitedException(
                    f"process {error_index} terminated with signal {name}",
                    error_index, failed.pid, exit_code, name)
            raise ProcessExitedException(f"process {error_index} terminated with exit code {exit_code}",
                                         error_index, failed.pid, exit_code)
        original = self.error_queues[error_index].get()
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n{original}"
        raise ProcessRaisedException(msg, error_index, failed.pid)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start nprocs processes running fn(i, *args) with the given start method; join them (and
    return None) or, with join=False, return their ProcessContext."""
    context = multiprocessing.get_context(start_method)
    error_queues, processes = [], []
    for i in range(nprocs):
        error_queue = context.SimpleQueue()
        process = context.Process(target=_wrap, args=(fn, i, args, error_queue), daemon=daemon)
        process.start()
        error_queues.append(error_queue)
        processes.append(process)
    process_context = ProcessContext(processes, error_queues)
    if not join:
        return process_context
    while not process_context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """start_processes with the 'spawn' start method (the only one PyTorch's spawn accepts
    without a warning): fn(i, *args) in each of nprocs fresh interpreters."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
