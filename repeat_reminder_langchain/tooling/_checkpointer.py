"""Reading the threads a LangGraph checkpointer keeps, one at a time, as conversations.

`--checkpointer postgresql://…` or `sqlite:///PATH` points the audit at the database a LangGraph
server (or any graph compiled with a checkpointer) keeps its threads in. Each thread's latest
checkpoint in one namespace is read through the checkpointer package's own API (`get_tuple` of
`PostgresSaver` or `SqliteSaver`, with their serializer), and the list of messages its state holds
becomes one conversation for the audit, named by the thread id and the checkpoint id.

Only the listing of threads is SQL, as no saver lists threads without reading every checkpoint of
every thread: it reads thread ids, namespaces and checkpoint ids (and, in PostgreSQL, the time),
a page at a time. Only one thread's state is held at a time, so memory does not grow with the
number of threads.

The database is only read: SQLite is opened read-only (`mode=ro`), and the PostgreSQL session is
made read-only before anything is read; neither saver's `setup` is asked to create or migrate a
table.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from langchain_core.messages import BaseMessage

from .._install import install_hint
from ._logs import Conversation, LogError, kind_of, to_messages

__all__ = [
    "CheckpointReader",
    "CheckpointerError",
    "Selection",
    "parse_since",
    "public_url",
    "sqlite_path",
]

_T = TypeVar("_T")
_PAGE = 500  # thread ids listed per query: a page is all the listing holds in memory
_SHOWN = 5  # problems kept and warned about, with `skip_bad`
_TIMEOUT = 10  # seconds to wait for a PostgreSQL server, unless the URL says otherwise
_LOCK_WAIT = 5.0  # seconds to wait for a SQLite file another process holds (sqlite3's default)


class CheckpointerError(LogError):
    """A checkpointer the audit cannot read, or one of its threads; the message says why."""


class _BadThread(CheckpointerError):
    """One thread that cannot be read: `skip_bad` skips it, and reads the others."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which threads to read, and where their messages are.

    Attributes:
        threads: These threads only, in this order; every thread (by id) when empty.
        since: Only threads whose latest checkpoint was written at or after this time.
        limit: At most this many threads.
        namespace: The checkpoint namespace: `""` for the graph itself, or a subgraph's. A
            namespace written without task ids (`child`, `child|grandchild`) stands for the
            subgraph's namespace in every run (`child:<task id>`); a thread's latest is read.
        messages_key: The state key holding the messages.
    """

    threads: tuple[str, ...] = ()
    since: datetime | None = None
    limit: int | None = None
    namespace: str = ""
    messages_key: str = "messages"


def parse_since(text: str) -> datetime:
    """An ISO 8601 date or time as an aware datetime; one without a time zone is UTC.

    Raises:
        ValueError: The text is no ISO 8601 date or time.

    Example:
        >>> parse_since("2025-06-01").isoformat()
        '2025-06-01T00:00:00+00:00'
        >>> parse_since("2025-06-01T12:30:00+02:00").isoformat()
        '2025-06-01T12:30:00+02:00'
    """
    found = datetime.fromisoformat(text.strip())
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def public_url(url: str) -> str:
    """The URL as it may be shown: a password in it, or in its query, replaced by `***`.

    Example:
        >>> public_url("postgresql://audit:s3cret@db:5432/langgraph?sslmode=require")
        'postgresql://audit:***@db:5432/langgraph?sslmode=require'
    """
    parts = urlsplit(url)
    user, at, host = parts.netloc.rpartition("@")
    name, colon, _ = user.partition(":")
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not colon and all(key != "password" for key, _ in query):
        return url  # as given: rebuilt, sqlite:////PATH would lose a slash
    netloc = f"{name}:***{at}{host}" if colon else parts.netloc
    hidden = [(key, "***" if key == "password" else value) for key, value in query]
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(hidden, safe="*")))


def _first_line(error: BaseException) -> str:
    """An error's message on one line (psycopg's span several, with tabs)."""
    text = " ".join(str(error).split())
    return text.removeprefix("connection failed: ") or type(error).__name__


def _needs_extra(scheme: str, error: ImportError) -> CheckpointerError:
    missing = error.name or "a package"
    return CheckpointerError(
        f"--checkpointer {scheme}: needs the checkpointers extra ({missing} is not installed): "
        f"{install_hint('checkpointers')}"
    )


class _Store(ABC):
    """One database: its saver, and the SQL that lists its threads.

    Attributes:
        saver: The checkpointer package's saver, reading through the store's connection.
        errors: What the database's driver raises: a failure of the database, not of a thread.
    """

    saver: Any
    errors: tuple[type[BaseException], ...]
    _mark = "?"  # the driver's query parameter placeholder

    def __init__(self, source: str) -> None:
        self.source = source

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    @abstractmethod
    def _rows(self, query: str, parameters: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows `query` finds, with `parameters` in its placeholders."""

    def _since(self, since: datetime) -> tuple[str, list[Any]] | None:
        """A condition keeping checkpoints written since `since`, when the SQL can read it."""
        return None

    def failure(self, error: BaseException) -> CheckpointerError:
        """A failure of the database (one of `errors`), as one line."""
        return CheckpointerError(
            f"{self.source}: cannot read the checkpoints ({_first_line(error)})"
        )

    def _latest(
        self, selection: Selection, *, after: str | None, thread: str | None, limit: int | None
    ) -> tuple[str, list[Any]]:
        """The query listing each thread's latest checkpoint in the namespace, by thread id."""
        mark = self._mark
        match, parameters = self._namespace(selection.namespace, "c")
        newer, newer_parameters = self._namespace(selection.namespace, "n")
        conditions = [match]
        if thread is not None:
            conditions.append(f"c.thread_id = {mark}")
            parameters.append(thread)
        elif after is not None:
            conditions.append(f"c.thread_id > {mark}")
            parameters.append(after)
        # A thread named is found whatever its time: too old is not missing (and is left out
        # after reading, as on SQLite).
        since = selection.since if thread is None else None
        if since is not None and (condition := self._since(since)) is not None:
            conditions.append(condition[0])
            parameters += condition[1]
        query = (
            "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id FROM checkpoints c "
            f"WHERE {' AND '.join(conditions)} AND NOT EXISTS (SELECT 1 FROM checkpoints n "
            f"WHERE n.thread_id = c.thread_id AND {newer} AND (n.checkpoint_id > c.checkpoint_id "
            "OR (n.checkpoint_id = c.checkpoint_id AND n.checkpoint_ns > c.checkpoint_ns))) "
            "ORDER BY c.thread_id"
        )
        parameters += newer_parameters
        if limit is not None:
            query += f" LIMIT {mark}"
            parameters.append(limit)
        return query, parameters

    def _namespace(self, namespace: str, table: str) -> tuple[str, list[Any]]:
        """A condition on `table`'s namespace: the one named, or that subgraph in any run."""
        mark = self._mark
        column = f"{table}.checkpoint_ns"
        if not namespace or ":" in namespace:
            return f"{column} = {mark}", [namespace]
        # `child|grandchild` stands for `child:<task id>|grandchild:<task id>`: the same nodes,
        # as deep (task ids hold no `|`), whatever the task ids.
        escaped = namespace.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = "|".join(f"{part}:%" for part in escaped.split("|"))
        depth = f"length({column}) - length(replace({column}, '|', ''))"
        like = f"{column} LIKE {mark} ESCAPE '\\'"
        condition = f"({column} = {mark} OR ({like} AND {depth} = {mark}))"
        return condition, [namespace, pattern, namespace.count("|")]

    def count(self, selection: Selection) -> int:
        """How many threads the listing holds (for the progress bar)."""
        query, parameters = self._latest(selection, after=None, thread=None, limit=None)
        rows = self._rows(f"SELECT count(*) FROM ({query}) listed", parameters)
        return int(rows[0][0])

    def threads(self, selection: Selection) -> Iterator[tuple[str, str, str]]:
        """Each thread's latest checkpoint, `(thread id, namespace, checkpoint id)`, by id."""
        after: str | None = None
        while True:
            query, parameters = self._latest(selection, after=after, thread=None, limit=_PAGE)
            page = self._rows(query, parameters)
            for row in page:
                after = row[0]
                yield row[0], row[1], row[2]
            if len(page) < _PAGE:
                return

    def holds(self, namespace: str) -> bool:
        """Whether any checkpoint is in the namespace, whatever its time."""
        match, parameters = self._namespace(namespace, "c")
        return bool(self._rows(f"SELECT 1 FROM checkpoints c WHERE {match} LIMIT 1", parameters))

    def namespaces(self) -> list[str]:
        """The namespaces the checkpoints are in, as node paths (`child|grandchild`), sorted."""
        rows = self._rows("SELECT DISTINCT checkpoint_ns FROM checkpoints", ())
        return sorted(
            {"|".join(part.partition(":")[0] for part in row[0].split("|")) for row in rows}
        )

    def thread(self, selection: Selection, thread: str) -> tuple[str, str] | None:
        """One thread's latest checkpoint, `(namespace, checkpoint id)`, if it has one."""
        query, parameters = self._latest(selection, after=None, thread=thread, limit=1)
        rows = self._rows(query, parameters)
        return (rows[0][1], rows[0][2]) if rows else None


class _Sqlite(_Store):
    """A SQLite file, as `SqliteSaver` of langgraph-checkpoint-sqlite 3.x writes it.

    Its checkpoints are serialized blobs, so SQL cannot read their time: `since` is checked on
    each thread's state once read.
    """

    def __init__(self, source: str, path: str) -> None:
        super().__init__(source)
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver
        except ImportError as error:
            raise _needs_extra("sqlite:///", error) from None
        self.errors = (sqlite3.Error,)
        _check_file(source, path)
        uri = f"{Path(path).absolute().as_uri()}?mode=ro"
        # A database in WAL mode makes even a reader create its -wal and -shm files beside it.
        # With neither there, no connection has it open: read it as immutable, which creates
        # nothing. With them there, they are another connection's, and its writes are read
        # through them. (A database in rollback mode creates nothing for a reader, and its
        # locks keep a reader out while a writer works: read as it is.)
        if _wal_mode(path) and not any(os.path.exists(path + s) for s in ("-wal", "-shm")):
            uri += "&immutable=1"
        self._conn = sqlite3.connect(uri, uri=True, timeout=_LOCK_WAIT, check_same_thread=False)
        try:
            self._check()
            self.saver = SqliteSaver(self._conn, serde=_serializer())
            self._setup()
        except BaseException:
            self._conn.close()
            raise

    def _check(self) -> None:
        # The layout SqliteSaver.setup creates in langgraph-checkpoint-sqlite 3.x: the tables
        # `checkpoints` (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type,
        # checkpoint, metadata) and `writes`. The listing reads the first three columns.
        try:
            rows = self._rows(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name IN ('checkpoints', 'writes')",
                (),
            )
        except sqlite3.DatabaseError as error:
            if _locked(error):
                raise self.failure(error) from None
            raise CheckpointerError(
                f"{self.source}: not an SQLite database ({_first_line(error)})"
            ) from None
        missing = {"checkpoints", "writes"} - {row[0] for row in rows}
        if missing:
            raise CheckpointerError(
                f"{self.source}: holds no LangGraph checkpoints (no table "
                f"{' or '.join(sorted(missing))}): is it the checkpointer's database?"
            )

    def _setup(self) -> None:
        try:
            self.saver.setup()
        except sqlite3.OperationalError:
            # setup() switches a file in rollback journal mode to WAL, which a reader may not,
            # and the tables are there. (A lock met here is met again, and said, at the first
            # read.)
            self.saver.is_setup = True

    def failure(self, error: BaseException) -> CheckpointerError:
        """A failure of the file; a lock another process holds is said as one."""
        if _locked(error):
            return CheckpointerError(
                f"{self.source}: locked by another process, which is writing to it (waited "
                f"{_LOCK_WAIT:g} s): audit it when that is done, or a copy of it"
            )
        return super().failure(error)

    def close(self) -> None:
        """Close the file."""
        self._conn.close()

    def _rows(self, query: str, parameters: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._conn.execute(query, tuple(parameters)).fetchall()


def _locked(error: BaseException) -> bool:
    """Whether SQLite gave up waiting for a lock (SQLITE_BUSY: "database is locked")."""
    return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY


def _check_file(source: str, path: str) -> None:
    """Raise, in words, why `path` is no file this user may read, if it is not."""
    try:
        # Non-blocking, so that a named pipe is not waited on: it is found no file below.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise CheckpointerError(f"{source}: {_unopened(path, error)}") from None
    try:
        mode = os.fstat(descriptor).st_mode
    finally:
        os.close(descriptor)
    if stat.S_ISDIR(mode):
        raise CheckpointerError(f"{source}: is a directory")
    if not stat.S_ISREG(mode):
        raise CheckpointerError(f"{source}: is not a regular file")


def _unopened(path: str, error: OSError) -> str:
    """Why the file could not be opened, as the line says it."""
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if not isinstance(error, PermissionError):
        return str(error.strerror)
    try:
        os.stat(path)
    except PermissionError:  # a directory of the path may not be entered (searched)
        return "permission denied: this user may not enter a directory of its path"
    return "permission denied: this user may not read it"


_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")
"""The tables of langgraph-checkpoint-postgres 3.x, each of which the audit reads."""


class _Postgres(_Store):
    """A PostgreSQL database, as `PostgresSaver` of langgraph-checkpoint-postgres 3.x writes it."""

    _mark = "%s"

    def __init__(self, source: str, url: str) -> None:
        super().__init__(source)
        try:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row
        except ImportError as error:
            raise _needs_extra("postgresql://", error) from None
        self.errors = (psycopg.Error,)
        options: dict[str, Any] = {}
        if "connect_timeout" not in url:
            options["connect_timeout"] = _TIMEOUT
        try:
            # As PostgresSaver.from_conn_string connects, and then read-only: a session
            # setting rather than a startup option, which poolers such as PgBouncer refuse.
            self._conn = psycopg.Connection.connect(
                url, autocommit=True, prepare_threshold=0, row_factory=dict_row, **options
            )
        except psycopg.Error as error:
            raise CheckpointerError(f"{source}: cannot connect ({_first_line(error)})") from None
        try:
            self._conn.execute("SET default_transaction_read_only = on")
            self._check(PostgresSaver.MIGRATIONS)
        except BaseException as error:
            self._conn.close()
            if isinstance(error, psycopg.Error):  # a role without a grant, a server lost
                raise self.failure(error) from None
            raise
        self.saver = PostgresSaver(self._conn, serde=_serializer())

    def _check(self, migrations: Sequence[str]) -> None:
        # The layout of langgraph-checkpoint-postgres's migrations, the version the installed
        # saver writes: with 3.1 and later, 10 migrations (v 0 to 9), the tables `checkpoints`
        # (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint JSONB with
        # the time in `ts`, metadata), `checkpoint_blobs`, `checkpoint_writes` and
        # `checkpoint_migrations`. The listing reads thread_id, checkpoint_ns, checkpoint_id
        # and checkpoint->>'ts'.
        found = self._rows(
            "SELECT " + ", ".join(f"to_regclass({self._mark}) IS NOT NULL" for _ in _TABLES),
            _TABLES,
        )[0]
        missing = [name for name, there in zip(_TABLES, found, strict=True) if not there]
        if len(missing) == len(_TABLES):
            raise CheckpointerError(
                f"{self.source}: holds no LangGraph checkpoint tables ({', '.join(_TABLES)}): "
                "is it the checkpointer's database?"
            )
        wanted = len(migrations) - 1
        at = -1
        if "checkpoint_migrations" not in missing:
            at = self._rows("SELECT coalesce(max(v), -1) FROM checkpoint_migrations", ())[0][0]
        if missing or at != wanted:
            package = _version("langgraph-checkpoint-postgres")
            if at > wanted:
                advice = f"upgrade langgraph-checkpoint-postgres ({package} reads up to v{wanted})"
            else:
                advice = (
                    f"langgraph-checkpoint-postgres {package} reads v{wanted}: run its setup() "
                    "once, as the server does (the audit only reads)"
                )
            raise CheckpointerError(
                f"{self.source}: its checkpoint tables are at migration v{at}: {advice}"
            )

    def _since(self, since: datetime) -> tuple[str, list[Any]]:
        return f"(c.checkpoint ->> 'ts')::timestamptz >= {self._mark}", [since]

    def failure(self, error: BaseException) -> CheckpointerError:
        """A failure of the database; a role without a grant is told which it needs."""
        from psycopg.errors import InsufficientPrivilege

        found = super().failure(error)
        if isinstance(error, InsufficientPrivilege):
            return CheckpointerError(f"{found}: the role needs SELECT on {', '.join(_TABLES)}")
        return found

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def _rows(self, query: str, parameters: Sequence[Any]) -> list[tuple[Any, ...]]:
        from psycopg.rows import tuple_row

        with self._conn.cursor(row_factory=tuple_row) as cursor:
            return cursor.execute(query, tuple(parameters)).fetchall()


def _serializer() -> Any:
    """The savers' own serializer, rebuilding only the types LangGraph lists as safe.

    Its default rebuilds any class a checkpoint names, importing its module: code a tampered
    database would choose. The audit needs the messages, which are on the list; a value of
    another type is left as its data.
    """
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return JsonPlusSerializer(allowed_msgpack_modules=None)


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:  # pragma: no cover - imported, so installed
        return "installed"


def _wal_mode(path: str) -> bool:
    """Whether the SQLite file at `path` is in WAL mode (its header's read and write versions)."""
    with open(path, "rb") as file:
        header = file.read(20)
    return header[18:20] == b"\x02\x02"


def sqlite_path(url: str) -> str | None:
    """The file a `sqlite:///PATH` URL names; None for another URL, or one that names none."""
    scheme, _, rest = url.partition(":")
    if scheme.lower() != "sqlite" or not rest.startswith("///") or len(rest) == 3:
        return None
    return rest[3:]


def _open(url: str) -> _Store:
    source = public_url(url)
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("postgresql", "postgres"):
        return _Postgres(source, url)
    if scheme == "sqlite":
        path = sqlite_path(url)
        if path is None:
            raise CheckpointerError(
                f"{source}: a SQLite file is named sqlite:///PATH (relative) or "
                "sqlite:////PATH (absolute)"
            )
        return _Sqlite(source, path)
    raise CheckpointerError(
        f"{source}: expected a postgresql://USER:PASSWORD@HOST:PORT/DATABASE or sqlite:///PATH URL"
    )


class CheckpointReader:
    """Reads the threads a checkpointer keeps, one at a time, as conversations.

    Args:
        url: `postgresql://…` (or `postgres://…`), or `sqlite:///PATH` (`sqlite:////PATH` for
            an absolute path).
        selection: Which threads, and where their messages are.
        skip_bad: Count and skip a thread that cannot be read (no messages, a checkpoint its
            serializer cannot decode, a thread named that has no checkpoint) instead of
            stopping at it.
        warn: Told each of the first few threads skipped, as a line.

    Attributes:
        source: The URL, as it may be shown (no password).
        sources: `[source]`, as the audit lists what it read.
        skipped: Threads skipped so far, with `skip_bad`.
        problems: The first few of those, each as an error message.
        visited: Threads listed so far (read, skipped, or left out by `since`).
    """

    def __init__(
        self,
        url: str,
        selection: Selection | None = None,
        *,
        skip_bad: bool = False,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.url = url
        self.selection = selection or Selection()
        self.skip_bad = skip_bad
        self.source = public_url(url)
        self.sources = [self.source]
        self.skipped = 0
        self.problems: list[str] = []
        self.visited = 0
        self._warn = warn
        self._store: _Store | None = None

    def count(self) -> int:
        """How many threads the audit will visit, at most (for the progress bar)."""
        selection = self.selection
        if selection.threads:
            total = len(selection.threads)
        else:
            store = self._open()
            total = _failing(store, lambda: store.count(selection))
        return total if selection.limit is None else min(total, selection.limit)

    def read(self) -> Generator[Conversation, None, None]:
        """Each selected thread's latest state, as a conversation, by thread id.

        Raises:
            CheckpointerError: The database cannot be read, or a thread cannot (unless
                `skip_bad` says to skip it).
        """
        store = self._open()
        try:
            read = 0
            for thread, namespace, checkpoint in self._listed(store):
                if self.selection.limit is not None and read >= self.selection.limit:
                    return
                self.visited += 1
                try:
                    found = self._conversation(store, thread, namespace, checkpoint, read)
                except _BadThread as error:
                    self._skip(str(error))
                    continue
                if found is not None:
                    read += 1
                    yield found
            if not self.visited and self.selection.namespace and not self.selection.threads:
                _failing(store, partial(self._check_namespace, store))
        finally:
            self.close()

    def close(self) -> None:
        """Close the database, if open."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def _open(self) -> _Store:
        if self._store is None:
            self._store = _open(self.url)
        return self._store

    def _check_namespace(self, store: _Store) -> None:
        """Raise, naming those there are, when no checkpoint is in the namespace selected."""
        namespace = self.selection.namespace
        if store.holds(namespace):
            return  # threads are there, and `since` left them out
        there = [f"{name!r}{'' if name else ' (the graph itself)'}" for name in store.namespaces()]
        raise CheckpointerError(
            f"{self.source}: no checkpoint is in namespace {namespace!r}; its namespaces: "
            f"{', '.join(there) or 'none, it holds no checkpoint'}"
        )

    def _listed(self, store: _Store) -> Iterator[tuple[str, str, str | None]]:
        selection = self.selection
        if not selection.threads:
            listing = store.threads(selection)
            while (row := _failing(store, lambda: next(listing, None))) is not None:
                yield row
            return
        for thread in selection.threads:
            found = _failing(store, partial(store.thread, selection, thread))
            yield (thread, *found) if found is not None else (thread, selection.namespace, None)

    def _conversation(
        self, store: _Store, thread: str, namespace: str, checkpoint: str | None, index: int
    ) -> Conversation | None:
        """The thread's conversation; None when `since` leaves it out."""
        where = f"{self.source}: thread {thread}"
        if checkpoint is None:
            shown = f"namespace {namespace!r}" if namespace else "the root namespace"
            raise _BadThread(f"{where}: no checkpoint in {shown}")
        config = {
            "configurable": {
                "thread_id": thread,
                "checkpoint_ns": namespace,
                "checkpoint_id": checkpoint,
            }
        }
        try:
            found = _failing(store, lambda: store.saver.get_tuple(config))
        except CheckpointerError:  # the database failed, not this thread
            raise
        except Exception as error:
            # Whatever the serializer raises on bytes it did not write: an unknown type tag
            # (it says the tag is not implemented), bytes that are not msgpack (ValueError), a
            # class it will not rebuild (TypeError, ImportError), ...
            raise _BadThread(
                f"{where}: cannot decode checkpoint {checkpoint} ({_first_line(error)}): was "
                "it written with another serializer?"
            ) from None
        if found is None:  # deleted between the listing and the reading
            raise _BadThread(f"{where}: checkpoint {checkpoint} is gone")
        state = found.checkpoint
        since = self.selection.since
        if since is not None and not _recent(state, since, where):
            return None
        if self.selection.messages_key in (
            found.metadata.get("counters_since_delta_snapshot") or {}
        ):
            raise _BadThread(
                f"{where}: its {self.selection.messages_key!r} is a DeltaChannel (beta), which "
                "keeps changes rather than the list: the audit does not rebuild it"
            )
        messages, positions = self._messages(state.get("channel_values") or {}, where)
        return Conversation(
            index, thread, self.source, messages, positions, "langchain", checkpoint
        )

    def _messages(
        self, values: Mapping[str, Any], where: str
    ) -> tuple[list[BaseMessage], tuple[int, ...]]:
        key = self.selection.messages_key
        if key not in values:
            keys = ", ".join(sorted(k for k in values if not k.startswith("__"))) or "none"
            raise _BadThread(
                f"{where}: its state has no {key!r} (its keys: {keys}); name the key holding "
                "the messages with --messages-key"
            )
        value = values[key]
        if not isinstance(value, list | tuple):
            raise _BadThread(
                f"{where}: its {key!r} holds {type(value).__name__}, not a list of messages"
            )
        strays = [n for n, item in enumerate(value) if not isinstance(item, BaseMessage)]
        if not strays:
            return list(value), tuple(range(len(value)))
        if len(strays) < len(value):  # messages, and something else among them: name it
            raise _BadThread(
                f"{where}: its {key!r}: message {strays[0]} is {kind_of(value[strays[0]])}, "
                "not a message"
            )
        try:
            messages, positions, _ = to_messages(value)
        except LogError as error:
            raise _BadThread(f"{where}: its {key!r}: {error}") from None
        return messages, positions

    def _skip(self, problem: str) -> None:
        if not self.skip_bad:
            raise CheckpointerError(problem)
        self.skipped += 1
        if len(self.problems) < _SHOWN:
            self.problems.append(problem)
            if self._warn is not None:
                self._warn(problem)


def _failing(store: _Store, action: Callable[[], _T]) -> _T:
    """`action()` on `store`, with a failure of the database as one line."""
    try:
        return action()
    except store.errors as error:
        raise store.failure(error) from None


def _recent(state: Mapping[str, Any], since: datetime, where: str) -> bool:
    """Whether a thread's latest checkpoint was written at or after `since` (`--since`)."""
    try:
        written = parse_since(str(state["ts"]))
    except (KeyError, ValueError):
        raise _BadThread(
            f"{where}: its checkpoint has no time (ts) to compare with --since"
        ) from None
    return written >= since
