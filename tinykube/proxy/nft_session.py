"""A long-lived libnftables context inside a node's network namespace: how the nftables proxier talks to the kernel.

`nft -f -` per transaction costs a process start and, worse, reads the whole table back from the kernel into its
cache every time (over 200 ms for one element at 4,000 Services). A child started once per node with `ip netns
exec` keeps one libnftables context, whose cache stays valid between transactions, so a small change costs about
what it changes. A child rather than a thread of tinykube's own: its namespace is fixed for its whole life (nothing
can be programmed into the root namespace by mistake), and a crash of the C library takes only the child down.

Protocol over the child's stdin/stdout: a request is `<length>\\n<script>`, the answer `<rc> <length>\\n<text>`
(rc 0: nft's output; otherwise its error message).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys
import threading
from typing import IO

# Only the standard library at module level: the child runs this file as a script (no package on its path).


class NftError(Exception):
    """`nft` rejected a transaction or a command; the message carries nft's own error text."""


def libnftables_path() -> str | None:
    return ctypes.util.find_library("nftables")


class NftSession:
    """Runs nft scripts in `netns` through the child; restarted on the next call if it died."""

    def __init__(self, netns: str) -> None:
        self.netns = netns
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # one transaction at a time on the pipe

    def run(self, script: str) -> str:
        data = script.encode()
        with self._lock:
            child = self._child if self._child and self._child.poll() is None else self._start()
            assert child.stdin is not None and child.stdout is not None
            try:
                child.stdin.write(b"%d\n" % len(data) + data)
                child.stdin.flush()
                rc, text = _read_answer(child.stdout)
            except (OSError, ValueError) as err:
                self._stop()
                raise NftError(f"nft session in {self.netns} died: {err}") from err
        if rc != 0:
            raise NftError(text.strip())
        return text

    def _start(self) -> subprocess.Popen[bytes]:
        from tinykube.sandbox.netns import exec_argv

        self._stop()
        argv = exec_argv(self.netns, [sys.executable, os.path.abspath(__file__)])
        # A process group of its own: a terminal's Ctrl-C on `tinykube up` must not kill it (even mid-start-up),
        # since the clean-up that follows may still use it; it ends when its stdin closes.
        self._child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, process_group=0)
        return self._child

    def _stop(self) -> None:
        if self._child is not None:
            if self._child.stdin:
                self._child.stdin.close()
            try:
                self._child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._child.kill()
                self._child.wait()
            if self._child.stdout:
                self._child.stdout.close()
            self._child = None

    def close(self) -> None:
        with self._lock:
            self._stop()


def _read_answer(stream: IO[bytes]) -> tuple[int, str]:
    header = stream.readline()
    if not header:
        raise ValueError("no answer (the child exited)")
    rc, length = (int(part) for part in header.split())
    return rc, stream.read(length).decode(errors="replace")


# ---------------------------------------------------------------------------------------------------------------
# The child


def _library() -> ctypes.CDLL:
    path = libnftables_path()
    if path is None:
        raise OSError("libnftables is not installed")
    lib = ctypes.CDLL(path)
    lib.nft_ctx_new.restype = ctypes.c_void_p
    lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
    lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    for name in ("nft_ctx_buffer_output", "nft_ctx_buffer_error"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    for name in ("nft_ctx_get_output_buffer", "nft_ctx_get_error_buffer"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
        getattr(lib, name).restype = ctypes.c_char_p
    return lib


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    try:
        lib = _library()
    except OSError as err:
        message = f"cannot load libnftables: {err}".encode()
        answers.write(b"1 %d\n" % len(message) + message)
        answers.flush()
        return
    ctx = lib.nft_ctx_new(0)
    lib.nft_ctx_buffer_output(ctx)
    lib.nft_ctx_buffer_error(ctx)
    while header := requests.readline():
        script = requests.read(int(header))
        rc = lib.nft_run_cmd_from_buffer(ctx, script)
        output = lib.nft_ctx_get_output_buffer(ctx) or b""  # read both: each read resets its buffer
        error = lib.nft_ctx_get_error_buffer(ctx) or b""
        text = output if rc == 0 else error or b"nft failed without a message"
        answers.write(b"%d %d\n" % (1 if rc else 0, len(text)) + text)
        answers.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
