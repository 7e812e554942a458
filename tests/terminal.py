"""A pseudo-terminal a test types into as a person would: a tmux session running one command, its screen read
back as text. The session is killed on the way out, whatever happened."""

from __future__ import annotations

import shlex
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from tests.conftest import eventually


class Terminal:
    def __init__(self, session: str) -> None:
        self.session = session

    def type(self, text: str) -> None:
        """Type a line and press Enter."""
        subprocess.run(["tmux", "send-keys", "-t", self.session, "-l", text], check=True)
        subprocess.run(["tmux", "send-keys", "-t", self.session, "Enter"], check=True)

    def screen(self) -> str:
        result = subprocess.run(
            ["tmux", "capture-pane", "-p", "-J", "-S", "-200", "-t", self.session], capture_output=True, text=True
        )
        return result.stdout

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        return eventually(lambda: text in (s := self.screen()) and s, timeout, what=f"{text!r} on the terminal")

    def resize(self, width: int, height: int) -> None:
        subprocess.run(["tmux", "resize-window", "-t", self.session, "-x", str(width), "-y", str(height)], check=True)


@contextmanager
def terminal(command: list[str], env: dict[str, str], width: int = 120, height: int = 30) -> Iterator[Terminal]:
    """`command` on a fresh terminal; once it ends the shell prints `EXIT=<status>` and the screen stays."""
    session = f"tk-{uuid.uuid4().hex[:8]}"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    line = f"{exports} {shlex.join(command)}; echo EXIT=$?; sleep 600"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height), "sh", "-c", line], check=True
    )
    try:
        yield Terminal(session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
