"""The connection side of the IMAP provider (`workbench.providers.imap.ImapMailbox`).

Connect (IMAPS, STARTTLS or plain), log in with the password given or found in the environment
or keyring, EXAMINE the folder read-only, reconnect once when the connection drops, bound every
socket wait by the ctx call's deadline (SEC5), and turn each failure into an E_MAILBOX naming
what to do. It also keeps the folder's UIDVALIDITY, and drops the UID caches when it changes.
"""

from __future__ import annotations

import imaplib
import os
import re
import ssl as _ssl
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, Self, TypeVar

from .._errors import WorkbenchError
from . import _imap_wire as wire
from . import mail as _mail
from .mail import Envelope
from .secrets import KEYRING_SERVICE, from_keyring

T = TypeVar("T")
ENV_VAR = "GEM_WORKBENCH_IMAP_PASSWORD"


class _Secret:
    """Holds the password so that repr, str, vars() dumps and pickle never show it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<hidden>"

    def __reduce__(self) -> Any:
        raise TypeError("a password is not pickled")


class ImapSession:
    """One folder of one IMAP account, connected on demand; `ImapMailbox` reads mail over it."""

    use_sort = True  # SORT (ARRIVAL) when the server offers it; False: SEARCH + all dates

    def __init__(
        self,
        host: str,
        port: int | None = None,
        *,
        user: str,
        password: str | None = None,
        account_id: str | None = None,
        ssl: bool | Literal["starttls"] = True,
        ssl_context: _ssl.SSLContext | None = None,
        folder: str = "INBOX",
        timeout: float = 30.0,
    ) -> None:
        if ssl not in (True, False, "starttls"):
            raise WorkbenchError("E_INVALID_ARGUMENT", f"ssl={ssl!r}: use True, 'starttls' or False")
        self.host, self.user, self.folder, self.ssl, self.timeout = host, user, folder, ssl, timeout
        self.port = port if port is not None else (993 if ssl is True else 143)
        self.account_id = account_id or user
        self.ssl_context = ssl_context
        self._secret = _Secret(password) if password is not None else None
        self._init_state()

    def _init_state(self) -> None:
        self._conn: imaplib.IMAP4 | None = None
        self._lock = threading.RLock()
        self._uidvalidity: bytes | None = None
        self._dates: dict[int, int] = {}  # uid -> INTERNALDATE ms (never changes)
        self._envelopes: dict[int, Envelope] = {}
        self._binary = False  # server has BINARY (RFC 3516)
        self._sort = False  # server has SORT (RFC 5256)

    def __getstate__(self) -> dict[str, Any]:
        # no password, no socket: an unpickled mailbox gets its password from env/keyring
        keep = ("host", "port", "user", "folder", "ssl", "timeout", "account_id")
        return {k: self.__dict__[k] for k in keep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.ssl_context, self._secret = None, None
        self._init_state()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Log out and close the connection (the next call opens a new one)."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                try:
                    conn.logout()
                except (imaplib.IMAP4.error, OSError):
                    _discard(conn)

    # -- connection ------------------------------------------------------------------------

    def _where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    def _error(self, message: str) -> WorkbenchError:
        return WorkbenchError("E_MAILBOX", message, host=self.host, port=self.port, user=self.user)

    def _run(self, op: Callable[[imaplib.IMAP4], T]) -> T:
        """Run op on the connection; if the connection dropped, reconnect and run it once more."""
        with self._lock:
            for attempt in (1, 2):
                self._bound_time(None)
                conn = self._conn or self._open()
                try:
                    self._bound_time(conn)
                    return op(conn)
                except (imaplib.IMAP4.abort, OSError) as e:
                    self._conn = None
                    _discard(conn)
                    self._bound_time(None)  # out of the call's time: E_TIMEOUT, no retry
                    if attempt == 2:
                        raise self._error(
                            f"the connection to {self._where()} dropped twice ({e}): check the "
                            "server and the network, then retry"
                        ) from e
                except imaplib.IMAP4.error as e:
                    if "got more than" in str(e):  # imaplib's line bound: the rest is unread
                        self._conn = None
                        _discard(conn)
                        raise self._error(
                            f"{self._where()} sent a response line over imaplib's "
                            f"bound ({e}); the message is too large to describe "
                            "(SEC5)"
                        ) from e
                    raise self._error(f"{self._where()} refused a command ({e})") from e
                finally:
                    if self._conn is not None:  # untagged responses pile up otherwise
                        self._conn.untagged_responses.clear()
            raise AssertionError("unreachable")

    def _bound_time(self, conn: imaplib.IMAP4 | None) -> None:
        """SEC5: E_TIMEOUT once the ctx call's deadline has passed; else each socket wait on
        `conn` is bounded by the time the call has left (and by `timeout`)."""
        deadline = _mail.DEADLINE.get()
        if deadline is None:
            if conn is not None and getattr(conn, "sock", None) is not None:
                conn.sock.settimeout(self.timeout)
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise WorkbenchError(
                "E_TIMEOUT",
                f"reading mail from {self._where()}: the call ran "
                "out of time (its timeout covers the ctx calls it makes)",
                host=self.host,
                port=self.port,
            )
        if conn is not None and getattr(conn, "sock", None) is not None:
            conn.sock.settimeout(min(self.timeout, left))

    def _password(self) -> str:
        if self._secret is not None:
            return self._secret.value
        specific = f"{ENV_VAR}_{re.sub(r'[^A-Za-z0-9]', '_', self.account_id).upper()}"
        for var in (specific, ENV_VAR):
            if os.environ.get(var):
                return os.environ[var]
        found = from_keyring(f"{self.user}@{self.host}")
        if found:
            return found
        raise self._error(
            f"no password for {self._where()}: pass password=, set {specific} or {ENV_VAR}, or "
            f"store it with keyring (service {KEYRING_SERVICE!r}, username "
            f"'{self.user}@{self.host}')"
        )

    def _open(self) -> imaplib.IMAP4:
        """Connect, log in, EXAMINE the folder; every failure is an E_MAILBOX naming what to do."""
        password = self._password()
        conn = self._connect()
        try:
            try:
                conn.login(self.user, password)
            except imaplib.IMAP4.error as e:
                said = str(e).replace(password, "***") if password else str(e)
                raise self._error(
                    f"login as {self.user!r} on {self.host}:{self.port} failed ({said}): check "
                    "the user name and the password (or the app password your provider "
                    "wants)"
                ) from None
            finally:
                getattr(conn, "_cmd_log", {}).clear()  # imaplib keeps the LOGIN line for debugging
            # the capabilities after login come with its reply (Dovecot adds BINARY then)
            listed = (
                b" ".join(c for c in conn.untagged_responses.pop("CAPABILITY", []) if isinstance(c, bytes))
                .decode("ascii", "replace")
                .upper()
                .split()
            )
            caps = set(listed) | set(conn.capabilities)
            self._binary, self._sort = "BINARY" in caps, "SORT" in caps and self.use_sort
            typ, data = conn.select(wire.quote(self.folder), readonly=True)
            if typ != "OK":
                raise self._error(
                    f"cannot open folder {self.folder!r} of {self._where()} ({wire.said(data)}): "
                    "check folder="
                )
            self._note_uidvalidity(conn)
        except BaseException:
            _discard(conn)
            raise
        self._conn = conn
        return conn

    def _connect(self) -> imaplib.IMAP4:
        where = f"{self.host}:{self.port}"
        context = self.ssl_context or _ssl.create_default_context()
        conn: imaplib.IMAP4 | None = None
        try:
            if self.ssl is True:
                return imaplib.IMAP4_SSL(self.host, self.port, ssl_context=context, timeout=self.timeout)
            conn = imaplib.IMAP4(self.host, self.port, timeout=self.timeout)
            if self.ssl == "starttls":
                conn.starttls(context)
            return conn
        except _ssl.SSLCertVerificationError as e:
            hint = (
                f"TLS certificate of {where} not trusted ({e.verify_message}): pass "
                "ssl_context= with its CA (ssl.create_default_context(cafile=...))"
            )
        except _ssl.SSLError as e:
            hint = (
                f"TLS with {where} failed ({e.reason or e}): is {self.port} "
                f"{'an IMAPS' if self.ssl is True else 'a STARTTLS'} port? Try ssl=True "
                "(port 993) or ssl='starttls' (port 143)"
            )
        except ConnectionRefusedError:
            hint = f"connection to {where} refused: is the IMAP server running, and the port right?"
        except TimeoutError:
            hint = (
                f"no IMAP greeting from {where} within {self.timeout:g} s: wrong port, or "
                "an IMAPS port opened without TLS (ssl=True)?"
            )
        except OSError as e:
            hint = f"cannot reach {where} ({e}): check the host name and the network"
        except imaplib.IMAP4.error as e:
            hint = f"{where} did not start TLS ({e}): use ssl=True (IMAPS) or ask for STARTTLS"
        if conn is not None:
            _discard(conn)
        raise self._error(f"{hint} [user {self.user!r}]")

    def _note_uidvalidity(self, conn: imaplib.IMAP4) -> None:
        _, data = conn.response("UIDVALIDITY")
        value = data[-1] if data and data[-1] else None
        if value is not None and value != self._uidvalidity:
            if self._uidvalidity is not None:  # a recreated folder: cached UIDs mean nothing
                self._dates.clear()
                self._envelopes.clear()
            self._uidvalidity = value

    def _check(self, reply: tuple[str, list[Any]], what: str) -> list[Any]:
        typ, data = reply
        if typ != "OK":
            raise self._error(f"{self._where()} answered {typ} to {what} ({wire.said(data)})")
        return data


def _discard(conn: imaplib.IMAP4) -> None:
    """Close a connection that is broken or unwanted, whatever state its socket is in."""
    try:
        conn.shutdown()
    except OSError:
        pass
