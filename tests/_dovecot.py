"""A throw-away Dovecot IMAP server on 127.0.0.1, for tests/test_imap.py and the IMAP benchmark.

Follows /work/shared/RECIPES.md: its own config, Maildir and self-signed certificate in a temp
folder, `uid=nobody` for mail (Dovecot refuses root), `dovecot -F` stopped by SIGTERM to its PID.
"""

from __future__ import annotations

import mailbox
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

USER, PASSWORD = "tester", "s3cret-Pa55word!"
CONFIG = """\
protocols = imap
listen = 127.0.0.1
base_dir = {t}/run
state_dir = {t}/state
log_path = {t}/log/dovecot.log
auth_failure_delay = 0  # a bad-password test need not wait 2 s
ssl = yes
ssl_cert = <{t}/ssl/cert.pem
ssl_key = <{t}/ssl/key.pem
mail_location = maildir:{t}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {t}/users
}}
userdb {{
  driver = static
  args = uid=nobody gid=nogroup home={t}/mail/%u
}}
service anvil {{  # no growing delay after the bad-password tests' failed logins
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps}
    ssl = yes
  }}
}}
"""


def _command(name: str) -> str | None:
    """Where `name` is: on PATH, or in /usr/sbin (not on a non-root PATH)."""
    return shutil.which(name) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)


def available() -> str | None:
    """None if Dovecot and openssl are installed; else what is missing (a skip reason)."""
    missing = [c for c in ("dovecot", "openssl") if _command(c) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (Debian: apt-get install dovecot-imapd openssl)"
    if os.geteuid() != 0:
        return "Dovecot needs root here, to run mail as uid nobody"
    return None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Dovecot:
    """A running server: where it listens, its one user, and that user's Maildir (INBOX)."""

    root: Path
    imap_port: int  # plain IMAP, STARTTLS offered
    imaps_port: int  # implicit TLS, self-signed certificate
    pid: int
    user: str = USER
    password: str = PASSWORD

    @property
    def maildir(self) -> Path:
        return self.root / "mail" / self.user


def add_messages(maildir: Path, messages: Sequence[tuple[EmailMessage | bytes, float]]) -> None:
    """Write (message, unix time) pairs into a Maildir; the time becomes Dovecot's INTERNALDATE.

    Only before start, or for a stopped server: files written as root must be chowned to nobody.
    """
    box = mailbox.Maildir(str(maildir), create=True)
    for msg, ts in messages:
        m = mailbox.MaildirMessage(msg)
        m.set_subdir("cur")  # seen as old mail, no \\Recent
        m.set_date(ts)
        box.add(m)  # mailbox.Maildir sets the file's mtime from the date: that is INTERNALDATE
    box.close()


def _wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"dovecot exited with {proc.returncode}: {_tail(log)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"dovecot not listening on 127.0.0.1:{port} after 15 s: {_tail(log)}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM and wait: a new server in the same base_dir must not start before it is gone."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def running_dovecot(setup: Callable[[Path], None] | None = None) -> Iterator[Dovecot]:
    """Start Dovecot in a new temp folder and stop it (and delete the folder) on exit.

    `setup(maildir)` runs before start, e.g. to write messages with `add_messages`.
    """
    if reason := available():
        raise RuntimeError(f"cannot start Dovecot: {reason}")
    # not pytest's tmp_path: it is mode 0700 under root, and mail runs as nobody
    root = Path(tempfile.mkdtemp(prefix="workbench-dovecot-"))
    proc: subprocess.Popen[bytes] | None = None
    try:
        root.chmod(0o755)
        for sub in ("run", "state", "log", "mail", "ssl"):
            (root / sub).mkdir()
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=localhost",
                "-keyout",
                str(root / "ssl/key.pem"),
                "-out",
                str(root / "ssl/cert.pem"),
            ],
            check=True,
            capture_output=True,
        )
        (root / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        maildir = root / "mail" / USER
        mailbox.Maildir(str(maildir), create=True).close()
        if setup:
            setup(maildir)
        subprocess.run(["chown", "-R", "nobody:nogroup", str(root / "mail")], check=True)
        for attempt in range(3):  # a port picked free may be taken before dovecot binds it
            imap, imaps = free_port(), free_port()
            conf = root / "dovecot.conf"
            conf.write_text(CONFIG.format(t=root, imap=imap, imaps=imaps))
            proc = subprocess.Popen(
                [str(_command("dovecot")), "-F", "-c", str(conf)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                _wait_listening(proc, imap, root / "log/dovecot.log")
                _wait_listening(proc, imaps, root / "log/dovecot.log")
                break
            except RuntimeError:
                _stop(proc)
                if attempt == 2:
                    raise
        assert proc is not None
        yield Dovecot(root=root, imap_port=imap, imaps_port=imaps, pid=proc.pid)
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(root, ignore_errors=True)
