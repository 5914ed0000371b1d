#!/usr/bin/env python3
"""`cargo xtask bench mcp`: `toolshed mcp` against the reference Node filesystem MCP server.

    mcp_bench.py --toolshed BIN --node NODE --reference-js INDEX_JS --tree DIR --work DIR
                 [--starts N] [--reads N] [--searches N] [--json OUT]

Both servers run over stdio and are driven by the same two clients:

* the official Python MCP SDK (`mcp.client.stdio.stdio_client` + `ClientSession`), what a real
  Python agent would use; its own cost (pydantic models, output-schema validation, anyio
  streams) is part of every figure it gives;
* a minimal raw JSON-RPC client (one JSON line written, lines read until the matching response,
  blocking pipes), which shows the servers with as little client overhead as Python allows.

Measured, for each server and each client:

1. cold start to the first tools/list response: spawn, initialize, notifications/initialized,
   tools/list; wall time, median of --starts runs;
2. idle RSS: VmRSS of the server process (for the reference, the `node` process) one second
   after tools/list answered, in each SDK start; the median is shown, and the anonymous part
   (RssAnon): the rest is clean pages of the executable and libraries, shared with the page
   cache, whose count depends on the kernel's fault-around and the file system;
3. round trip of a small read: --reads sequential calls reading a 1 KB file (toolshed `file_read`,
   reference `read_text_file`, or `read_file` on older versions), after a warm-up; the median;
4. one search over the 50,000-file tree: toolshed `find_files` with `*.rs` (file names at any
   depth) and the reference `search_files` with `**/*.rs` (its globs match paths relative to the
   root); one warm-up, then the median of --searches runs. Each side's match count is shown: the
   reference ignores .gitignore, so it also finds the ignored `build/gen.rs` files.

Cold starts alternate the servers; for reads and searches both servers are up at once and the
client alternates between them (reads in blocks of 50), so that load from elsewhere on the
machine falls on both alike. Prints a markdown table on stdout, progress on stderr, and writes
every sample to WORK/results.json; with --json OUT, also the summary rows that
`cargo xtask bench report` reads.
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

# The tree the fs bench builds (crates/tools-fs/benches/search.rs): same layout when built here.
DIRS = 500
FILES_PER_DIR = 100
SMALL_FILE = "small.txt"
IDLE_WAIT_S = 1.0
READ_WARMUP = 20
READ_BLOCK = 50
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


# --------------------------------------------------------------------------------------------
# Setup


def build_tree(tree: Path) -> None:
    """The fs bench's layout (500 dirs × 100 files, .gitignore hiding build/ and *.log), with
    simpler contents: only names matter to a file-name search."""
    if (tree / ".complete").is_file():
        return
    print(f"building {DIRS} × {FILES_PER_DIR} files in {tree} (once)…", file=sys.stderr)
    tree.mkdir(parents=True, exist_ok=True)
    (tree / ".git").mkdir(exist_ok=True)
    (tree / ".gitignore").write_text("*.log\nbuild/\n")
    for d in range(DIRS):
        directory = tree / f"pkg{d % 50:02}" / f"mod{d:03}"
        directory.mkdir(parents=True, exist_ok=True)
        for f in range(FILES_PER_DIR):
            ext = ("rs", "py", "js", "md")[f % 4]
            body = f"// Module {d}/{f}: generated for the MCP benchmark.\n" + (
                f"pub fn helper_{d}_{f}() -> u32 {{ {d * f} }}\n" * 24
            )
            (directory / f"item{f:03}.{ext}").write_text(body)
        if d % 5 == 0:
            (directory / "debug.log").write_text("TODO fn helper_17( item42_\n")
            (directory / "build").mkdir(exist_ok=True)
            (directory / "build" / "gen.rs").write_text("TODO fn helper_17( item42_\n")
    (tree / ".complete").write_text("")


def prepare_workspace(work: Path) -> Path:
    """A small workspace holding one 1 KB text file."""
    ws = work / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    line = "The quick brown fox jumps over the lazy dog; 0123456789 abcdefg\n"  # 64 bytes
    assert len(line) == 64
    (ws / SMALL_FILE).write_text(line * 16)  # 1024 bytes
    return ws


def find_program(program: Path) -> Path:
    """A bare name is looked up on PATH; a path is made absolute."""
    if os.sep in str(program):
        return program.resolve()
    found = shutil.which(str(program))
    if found is None:
        raise SystemExit(f"`{program}` is not on PATH")
    return Path(found)


def base_env() -> dict[str, str]:
    return {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}


@dataclass
class Server:
    """How to start one server and call its read and search tools."""

    label: str
    argv: Callable[[Path], list[str]]
    env: dict[str, str]
    read_tool: Callable[[list[str]], str]
    read_args: Callable[[Path], dict[str, Any]]
    search_tool: str
    search_args: Callable[[Path], dict[str, Any]]
    version: str = ""
    tool_names: list[str] = field(default_factory=list)


def toolshed_server(binary: Path, work: Path) -> Server:
    config = work / "toolshed-bench.toml"
    # Raise the output cap so the search result is complete, as the fs bench does.
    config.write_text("[limits]\nmax_output_bytes = 1000000000\n")
    no_user_config = work / "no-user-config"
    no_user_config.mkdir(exist_ok=True)
    env = base_env() | {"XDG_CONFIG_HOME": str(no_user_config)}
    version = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return Server(
        label="toolshed",
        argv=lambda root: [
            str(binary),
            "--workspace",
            str(root),
            "--config",
            str(config),
            "mcp",
        ],
        env=env,
        read_tool=lambda _names: "file_read",
        read_args=lambda _root: {"path": SMALL_FILE},
        search_tool="find_files",
        search_args=lambda _root: {"pattern": "*.rs", "max_results": 1_000_000},
        version=version,
    )


def reference_server(node: Path, index_js: Path) -> Server:
    package = json.loads((index_js.parent.parent / "package.json").read_text())
    node_version = subprocess.run(
        [str(node), "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()

    def read_tool(names: list[str]) -> str:
        for name in ("read_text_file", "read_file"):
            if name in names:
                return name
        raise RuntimeError(f"the reference lists no read tool: {names}")

    return Server(
        label="server-filesystem",
        argv=lambda root: [str(node), str(index_js), str(root)],
        env=base_env(),
        read_tool=read_tool,
        read_args=lambda root: {"path": str(root / SMALL_FILE)},
        search_tool="search_files",
        search_args=lambda root: {"path": str(root), "pattern": "**/*.rs"},
        version=f"{package['name']} {package['version']} on node {node_version}",
    )


# --------------------------------------------------------------------------------------------
# Processes


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon and RssFile of a process, in KiB."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
    return out


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The fields after the parenthesised command name: state, ppid, ...
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def server_pid(before: set[int]) -> int:
    """The server process just spawned: our one new child (through any shell wrapper)."""
    kids = set(children(os.getpid())) - before
    if len(kids) != 1:
        raise RuntimeError(f"expected one new server process, found children {sorted(kids)}")
    pid = kids.pop()
    while True:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
        grandkids = children(pid)
        if comm in ("sh", "bash", "dash") and len(grandkids) == 1:
            pid = grandkids[0]
        else:
            return pid


# --------------------------------------------------------------------------------------------
# The SDK client


def params(server: Server, root: Path) -> StdioServerParameters:
    argv = server.argv(root)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=server.env, cwd=str(root))


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def sdk_start(
    server: Server, root: Path, errlog: Any
) -> tuple[float, dict[str, int], list[str]]:
    """Seconds from spawn to the tools/list response, and the memory figures (KiB) once idle."""
    before = set(children(os.getpid()))
    started = time.perf_counter()
    async with stdio_client(params(server, root), errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            elapsed = time.perf_counter() - started
            pid = server_pid(before)
            await anyio.sleep(IDLE_WAIT_S)
            rss = proc_status(pid)
    return elapsed, rss, [t.name for t in listed.tools]


def check_read(server: Server, text: str) -> None:
    if "quick brown fox" not in text:
        raise RuntimeError(f"{server.label}: the read returned something else: {text[:300]!r}")


def count_matches(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.endswith(".rs"))


# --------------------------------------------------------------------------------------------
# The raw JSON-RPC client


class Raw:
    """Newline-delimited JSON-RPC over the server's pipes, blocking, no validation."""

    def __init__(self, server: Server, root: Path, errlog: Any) -> None:
        self.proc = subprocess.Popen(
            server.argv(root),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=server.env,
            cwd=str(root),
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        wanted = self.next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": wanted, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                try:
                    code = self.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    code = None
                raise RuntimeError(f"the server closed stdout (exit status {code})")
            reply = json.loads(line)
            if "method" in reply:
                if "id" in reply:  # a request from the server: decline it
                    self.send(
                        {
                            "jsonrpc": "2.0",
                            "id": reply["id"],
                            "error": {"code": -32601, "message": "not supported"},
                        }
                    )
                continue
            if reply.get("id") == wanted:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def handshake(self) -> list[str]:
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "toolshed-mcp-bench", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return [t["name"] for t in self.request("tools/list")["tools"]]

    def call(self, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
        result = self.request("tools/call", {"name": tool, "arguments": args})
        text = "\n".join(c.get("text", "") for c in result.get("content", []))
        return bool(result.get("isError")), text

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def raw_start(server: Server, root: Path, errlog: Any) -> float:
    started = time.perf_counter()
    raw = Raw(server, root, errlog)
    try:
        raw.handshake()
        return time.perf_counter() - started
    finally:
        raw.close()


# --------------------------------------------------------------------------------------------
# Timed calls, alternating between the servers


@dataclass
class Conn:
    """One live connection: the SDK's session or the raw client, and its server's pid."""

    pid: int
    names: list[str]
    session: ClientSession | None = None
    raw: Raw | None = None
    last_text: str = ""

    async def call(self, tool: str, args: dict[str, Any]) -> str:
        if self.session is not None:
            result = await self.session.call_tool(tool, args)
            is_error, text = bool(result.is_error), text_of(result)
        else:
            assert self.raw is not None
            is_error, text = self.raw.call(tool, args)
        if is_error:
            raise RuntimeError(f"{tool} failed: {text[:500]}")
        self.last_text = text
        return text


async def connect(
    client: str, server: Server, root: Path, errlog: Any, stack: AsyncExitStack
) -> Conn:
    """Starts the server and completes the handshake and tools/list, with `client` (sdk|raw)."""
    before = set(children(os.getpid()))
    if client == "sdk":
        read, write = await stack.enter_async_context(
            stdio_client(params(server, root), errlog=errlog)
        )
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        return Conn(server_pid(before), names, session=session)
    raw = Raw(server, root, errlog)
    stack.callback(raw.close)
    names = raw.handshake()
    return Conn(server_pid(before), names, raw=raw)


@dataclass
class Timed:
    """One server's share of an alternating run."""

    times: list[float]
    last_text: str
    status: dict[str, int]


Plan = Callable[[Server, list[str], Path], tuple[str, dict[str, Any]]]


async def alternate(
    client: str,
    servers: list[Server],
    root: Path,
    logs: dict[str, Any],
    plan: Plan,
    warmup: Callable[[Server, str], None],
    runs: int,
    block: int,
) -> dict[str, Timed | Exception]:
    """Connects to every server, warms each up with one call (`warmup` checks its text), then
    times `runs` calls on each, `block` on one server, then `block` on the next, and so on."""
    out: dict[str, Timed | Exception] = {}
    async with AsyncExitStack() as stack:
        live: dict[str, tuple[Conn, str, dict[str, Any], list[float]]] = {}
        for s in servers:
            try:
                conn = await connect(client, s, root, logs[s.label], stack)
                tool, args = plan(s, conn.names, root)
                warmup(s, await conn.call(tool, args))
                live[s.label] = (conn, tool, args, [])
            except Exception as e:  # noqa: BLE001 - reported in the table
                out[s.label] = failed(s.label, f"{client} connect", e)
        done = 0
        while done < runs and live:
            n = min(block, runs - done)
            for label, (conn, tool, args, times) in list(live.items()):
                try:
                    for _ in range(n):
                        started = time.perf_counter()
                        await conn.call(tool, args)
                        times.append(time.perf_counter() - started)
                except Exception as e:  # noqa: BLE001 - reported in the table
                    out[label] = failed(label, f"{client} call", e)
                    del live[label]
            done += n
        for label, (conn, _tool, _args, times) in live.items():
            out[label] = Timed(times, conn.last_text, proc_status(conn.pid))
    return out


def read_plan(server: Server, names: list[str], root: Path) -> tuple[str, dict[str, Any]]:
    return server.read_tool(names), server.read_args(root)


def search_plan(server: Server, _names: list[str], root: Path) -> tuple[str, dict[str, Any]]:
    return server.search_tool, server.search_args(root)


def read_warmup(server: Server, text: str) -> None:
    check_read(server, text)


def search_warmup(_server: Server, _text: str) -> None:
    pass


# --------------------------------------------------------------------------------------------
# Running and reporting


def failed(label: str, what: str, e: BaseException) -> Exception:
    """Reports a failed measurement on stderr; the exception (its first leaf, for a group)
    goes into the table."""
    group = getattr(builtins, "BaseExceptionGroup", ())  # Python 3.11+
    while isinstance(e, group) and e.exceptions:
        e = e.exceptions[0]
    print(f"  {label}: {what} failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    return RuntimeError(f"{type(e).__name__}: {e}")


def attempt(what: str, label: str, fn: Callable[[], Any]) -> Any:
    """Runs one measurement; a failure becomes an exception the table shows."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - reported in the table
        return failed(label, what, e)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def ms(seconds: float) -> str:
    value = seconds * 1000
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 1:
        return f"{value:.1f} ms"
    return f"{value:.3f} ms"


def mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--toolshed", type=Path, required=True, help="the toolshed binary")
    ap.add_argument("--node", type=Path, required=True, help="the node binary (or its name)")
    ap.add_argument(
        "--reference-js", type=Path, required=True, help="server-filesystem's dist/index.js"
    )
    ap.add_argument(
        "--tree", type=Path, required=True, help="the 50,000-file tree (built if absent)"
    )
    ap.add_argument("--work", type=Path, required=True, help="a scratch directory")
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--reads", type=int, default=1000)
    ap.add_argument("--searches", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="write the summary rows here")
    a = ap.parse_args()

    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    tree = a.tree.resolve()
    build_tree(tree)
    ws = prepare_workspace(work)
    servers = [
        toolshed_server(a.toolshed.resolve(), work),
        reference_server(find_program(a.node), a.reference_js.resolve()),
    ]
    load_before = os.getloadavg()[0]
    samples = measure(servers, ws, tree, work, a.starts, a.reads, a.searches)
    load_after = os.getloadavg()[0]

    lines = [
        f"toolshed: {servers[0].version} ({len(servers[0].tool_names)} tools listed)",
        f"reference: {servers[1].version} ({len(servers[1].tool_names)} tools listed)",
        f"client: Python {platform.python_version()}, mcp SDK {_sdk_version()}",
        f"machine: {os.cpu_count()} CPUs, {platform.machine()}, Linux {platform.release()}, "
        f"load average {load_before:.2f} before / {load_after:.2f} after",
        f"tree: {tree}",
        "",
    ]
    lines += table(samples, servers[0].label, servers[1].label, a.starts, a.reads, a.searches)
    print("\n".join(lines))

    def jsonable(v: Any) -> Any:
        if isinstance(v, Exception):
            return {"error": str(v)}
        if isinstance(v, Timed):
            return {"times": v.times, "matches": count_matches(v.last_text), "status": v.status}
        return v

    results = {label: {k: jsonable(v) for k, v in d.items()} for label, d in samples.items()}
    (work / "results.json").write_text(json.dumps(results, indent=1))
    if a.json is not None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({
            "bench": "mcp",
            "starts": a.starts,
            "reads": a.reads,
            "searches": a.searches,
            "toolshed_version": servers[0].version,
            "reference_version": servers[1].version,
            "client": f"Python {platform.python_version()}, mcp SDK {_sdk_version()}",
            "rows": summary(samples, servers[0].label, servers[1].label,
                            a.starts, a.reads, a.searches),
        }, indent=1) + "\n")
    if any(isinstance(v, Exception) for d in samples.values() for v in d.values()):
        logs = ", ".join(str(work / f"{s.label}.stderr.log") for s in servers)
        raise SystemExit(f"some measurements failed (see above); the servers' stderr: {logs}")


def measure(
    servers: list[Server], ws: Path, tree: Path, work: Path, starts: int, reads: int, searches: int
) -> dict[str, dict[str, Any]]:
    """Every sample, by server label and measurement; a failed measurement is an exception."""
    logs = {s.label: open(work / f"{s.label}.stderr.log", "w") for s in servers}
    samples: dict[str, dict[str, Any]] = {
        s.label: {"start_sdk": [], "rss_idle_kib": [], "anon_idle_kib": [], "start_raw": []}
        for s in servers
    }

    # 1 and 2: cold starts, alternating the servers so load from elsewhere falls on both alike.
    print(f"  start_sdk: {starts} cold starts of each server…", file=sys.stderr, flush=True)
    for _ in range(starts):
        for s in servers:
            mine = samples[s.label]
            got = attempt(
                "SDK start", s.label, lambda s=s: anyio.run(sdk_start, s, ws, logs[s.label])
            )
            if isinstance(got, Exception):
                mine["start_sdk"] = mine["rss_idle_kib"] = mine["anon_idle_kib"] = got
            elif isinstance(mine["start_sdk"], list):
                elapsed, memory, names = got
                mine["start_sdk"].append(elapsed)
                mine["rss_idle_kib"].append(memory["VmRSS"])
                mine["anon_idle_kib"].append(memory["RssAnon"])
                s.tool_names = names
    print(f"  start_raw: {starts} cold starts of each server…", file=sys.stderr, flush=True)
    for _ in range(starts):
        for s in servers:
            mine = samples[s.label]
            got = attempt("raw start", s.label, lambda s=s: raw_start(s, ws, logs[s.label]))
            if isinstance(got, Exception):
                mine["start_raw"] = got
            elif isinstance(mine["start_raw"], list):
                mine["start_raw"].append(got)

    # 3 and 4: sequential small reads, then searches, both servers up, alternating.
    phases = [
        ("read", ws, read_plan, read_warmup, reads, READ_BLOCK),
        ("search", tree, search_plan, search_warmup, searches, 1),
    ]
    for name, root, plan, warmup, runs, block in phases:
        for client in ("sdk", "raw"):
            key = f"{name}_{client}"
            print(f"  {key}: {runs} calls on each server…", file=sys.stderr, flush=True)
            try:
                got = anyio.run(alternate, client, servers, root, logs, plan, warmup, runs, block)
            except Exception as e:  # noqa: BLE001 - reported in the table
                err = failed("both", key, e)
                got = {s.label: err for s in servers}
            for label, value in got.items():
                samples[label][key] = value
    for f in logs.values():
        f.close()
    return samples


def table(
    samples: dict[str, dict[str, Any]], ours: str, ref: str, starts: int, reads: int, searches: int
) -> list[str]:
    """The markdown table and the notes under it."""

    def cell(label: str, key: str, fmt: Callable[[Any], str], pick: Callable[[Any], Any]):
        value = samples[label].get(key)
        if isinstance(value, Exception):
            return f"error: {value}", None
        if value is None or (isinstance(value, list) and not value):
            return "n/a", None
        if isinstance(value, Timed) and not value.times:
            return "n/a", None
        v = pick(value)
        return fmt(v), v

    rows = []

    def row(
        metric: str,
        key: str,
        fmt: Callable[[Any], str],
        pick: Callable[[Any], Any],
        target: float | None,
    ) -> None:
        ours_text, ours_value = cell(ours, key, fmt, pick)
        ref_text, ref_value = cell(ref, key, fmt, pick)
        ratio, verdict = "n/a", ""
        if ours_value and ref_value:
            r = ref_value / ours_value
            ratio = f"{r:,.1f}x" if r >= 1 else f"{r:.2f}x (slower)"
            if target is not None:
                verdict = f"≥{target:g}x: {'met' if r >= target else 'not met'}"
        rows.append((metric, ours_text, ref_text, ratio, verdict))

    def timed_median(v: Timed) -> float:
        return median(v.times)

    def peak(v: Timed) -> int:
        return v.status["VmHWM"]

    start = "cold start → first tools/list"
    search = "search 50,000-file tree for .rs names"
    row(f"{start}, SDK client (median of {starts})", "start_sdk", ms, median, 10)
    row(f"{start}, raw JSON-RPC (median of {starts})", "start_raw", ms, median, 10)
    row(f"idle RSS after tools/list (median of {starts})", "rss_idle_kib", mib, median, 5)
    row("… of which anonymous (RssAnon)", "anon_idle_kib", mib, median, None)
    read = "1 KB read round trip"
    row(f"{read}, SDK client (median of {reads})", "read_sdk", ms, timed_median, None)
    row(f"{read}, raw JSON-RPC (median of {reads})", "read_raw", ms, timed_median, None)
    row(f"{search}, SDK client (median of {searches})", "search_sdk", ms, timed_median, 50)
    row(f"{search}, raw JSON-RPC (median of {searches})", "search_raw", ms, timed_median, 50)
    row("peak RSS (VmHWM) after the SDK searches", "search_sdk", mib, peak, None)

    def matches(label: str) -> str:
        for key in ("search_raw", "search_sdk"):
            v = samples[label].get(key)
            if isinstance(v, Timed):
                return f"{count_matches(v.last_text):,}"
        return "n/a"

    def p90(label: str, key: str) -> str:
        v = samples[label].get(key)
        if isinstance(v, Timed) and len(v.times) > 10:
            return ms(statistics.quantiles(v.times, n=10)[-1])
        return "n/a"

    out = ["| metric | toolshed | server-filesystem | ratio | target |", "|---|---:|---:|---:|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    out += [
        "",
        f"Search: toolshed `find_files` `*.rs` found {matches(ours)} files; server-filesystem "
        f"`search_files` `**/*.rs` found {matches(ref)} (it does not honour .gitignore, so it "
        "also lists the ignored build/gen.rs files; it returns absolute paths, toolshed relative "
        "ones).",
        f"Read p90: toolshed {p90(ours, 'read_sdk')} SDK / {p90(ours, 'read_raw')} raw; "
        f"server-filesystem {p90(ref, 'read_sdk')} SDK / {p90(ref, 'read_raw')} raw.",
        "Notes: the same clients drive both servers, one call at a time. Cold starts alternate "
        "the servers; for reads and searches both servers are up and the client alternates "
        "between them (reads in blocks of 50), so load from elsewhere falls on both alike. The "
        "SDK rows include the Python SDK's own cost (pydantic models, anyio streams, and for the "
        "reference the validation of the structuredContent its tools declare); the raw rows show "
        "the servers better. Idle RSS counts clean pages of the executable and its libraries "
        "(shared with the page cache, their number depends on the kernel and file system): the "
        "anonymous part is the server's own memory. The reads differ slightly: toolshed numbers "
        "the lines, the reference sends the text twice (content and structuredContent).",
    ]
    return out


def summary(
    samples: dict[str, dict[str, Any]], ours: str, ref: str, starts: int, reads: int, searches: int
) -> list[dict[str, Any]]:
    """The table's rows as numbers (ms or MiB), for `cargo xtask bench report`."""

    def value(label: str, key: str, pick: Callable[[Any], float]) -> tuple[float | None, str | None]:
        v = samples[label].get(key)
        if isinstance(v, Exception):
            return None, str(v)
        if v is None or (isinstance(v, list) and not v) or (isinstance(v, Timed) and not v.times):
            return None, "no samples"
        return pick(v), None

    def secs(xs: Any) -> float:
        return median(xs.times if isinstance(xs, Timed) else xs) * 1000

    def kib(xs: Any) -> float:
        return (xs.status["VmHWM"] if isinstance(xs, Timed) else median(xs)) / 1024

    plan = [
        (f"cold start → first tools/list, raw JSON-RPC (median of {starts})", "start_raw", "ms", secs),
        (f"cold start → first tools/list, SDK client (median of {starts})", "start_sdk", "ms", secs),
        (f"idle RSS after tools/list (median of {starts})", "rss_idle_kib", "MiB", kib),
        ("idle RSS, anonymous part (RssAnon)", "anon_idle_kib", "MiB", kib),
        (f"1 KB read round trip, raw JSON-RPC (median of {reads})", "read_raw", "ms", secs),
        (f"1 KB read round trip, SDK client (median of {reads})", "read_sdk", "ms", secs),
        (f"search 50,000-file tree for .rs names, raw (median of {searches})", "search_raw", "ms", secs),
        (f"search 50,000-file tree for .rs names, SDK (median of {searches})", "search_sdk", "ms", secs),
        ("peak RSS (VmHWM) after the SDK searches", "search_sdk", "MiB", kib),
    ]
    rows = []
    for label, key, unit, pick in plan:
        t, t_err = value(ours, key, pick)
        r, r_err = value(ref, key, pick)
        rows.append({"label": label, "unit": unit, "toolshed": t, "toolshed_error": t_err,
                     "reference_name": "server-filesystem", "reference": r,
                     "reference_error": r_err})
    return rows


def _sdk_version() -> str:
    try:
        from importlib.metadata import version

        return version("mcp")
    except Exception:  # noqa: BLE001
        return "unknown"


if __name__ == "__main__":
    main()
