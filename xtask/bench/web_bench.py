#!/usr/bin/env python3
"""`cargo xtask bench web`: toolshed's `web_fetch` against the reference MCP fetch server.

    web_bench.py --toolshed BIN --work DIR [--calls N] [--big-calls N] [--json OUT]

The reference is PyPI `mcp-server-fetch` (the official MCP servers' `fetch`: httpx, readabilipy
and markdownify), run as `python3 -m mcp_server_fetch --allow-private-ips --ignore-robots-txt`
so that it may reach the page server on 127.0.0.1. toolshed runs `toolshed mcp` with a config
that exempts 127.0.0.1 from its address checks (`web.allow_loopback_for_tests`) and allows http.

A page server in this script serves generated documentation pages (headings, paragraphs with
links and inline code, code blocks, lists, tables) of three sizes over HTTP/1.1 on 127.0.0.1.
Both servers are up at once and driven by the same minimal JSON-RPC client over stdio; each
call asks for the whole page as Markdown (toolshed `web_fetch` with max_chars 1,000,000,
reference `fetch` with max_length 999,999) with a fresh query string, so no cache answers.
Calls alternate between the servers (a fifth as many for the 2 MB page, where the reference
takes tens of seconds per call). Measured: the median and p90 wall time of a call, the
characters returned, and each server's peak RSS (VmHWM) at the end. Also checked, not timed:
whether each server refuses http://169.254.169.254/ when not told otherwise.

Prints a markdown table on stdout and writes every sample to WORK/web.json; with --json OUT,
also the summary rows that `cargo xtask bench report` reads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SIZES = {"20 KB": 20_000, "200 KB": 200_000, "2 MB": 2_000_000}


def page(size: int) -> bytes:
    """A documentation-like HTML page of about `size` bytes."""
    head = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Bench guide</title>"
        "<style>body{font-family:sans-serif}</style><script>var x=1;</script></head><body>"
        "<nav><a href='/'>Home</a> <a href='/docs'>Docs</a></nav><main>"
    )
    parts = [head]
    n = 0
    while sum(len(p) for p in parts) < size:
        parts.append(
            f"<h2 id='s{n}'>Section {n}</h2>"
            f"<p>The <code>fetch_{n}</code> call reads a page and returns <em>Markdown</em>; see "
            f"<a href='https://docs.example/section/{n}'>the reference for section {n}</a> and "
            f"<strong>mind the limits</strong> described below. Lorem ipsum dolor sit amet, "
            f"consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.</p>"
            f"<pre><code>let page_{n} = fetch(\"https://example.com/{n}\")?;\n"
            f"println!(\"{{}}\", page_{n}.len());</code></pre>"
            f"<ul><li>first point {n}</li><li>second point with <a href='/p/{n}'>a link</a></li></ul>"
            f"<table><tr><th>key</th><th>value</th></tr><tr><td>n</td><td>{n}</td></tr></table>"
        )
        n += 1
    parts.append("</main><footer>the end</footer></body></html>")
    return "".join(parts).encode()


PAGES = {label: page(size) for label, size in SIZES.items()}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        label = self.path.split("?")[0].strip("/").replace("_", " ")
        body = PAGES.get(label)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


class Raw:
    """Newline-delimited JSON-RPC over a server's pipes, blocking, no validation."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, errlog: Any) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, env=env, cwd=cwd
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
                raise RuntimeError(f"the server closed stdout (exit status {self.proc.poll()})")
            reply = json.loads(line)
            if "method" in reply:
                if "id" in reply:
                    self.send({"jsonrpc": "2.0", "id": reply["id"],
                               "error": {"code": -32601, "message": "not supported"}})
                continue
            if reply.get("id") == wanted:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def handshake(self) -> list[str]:
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "toolshed-web-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return [t["name"] for t in self.request("tools/list")["tools"]]

    def call(self, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
        result = self.request("tools/call", {"name": tool, "arguments": args})
        text = "\n".join(c.get("text", "") for c in result.get("content", []))
        return bool(result.get("isError")), text

    def peak_rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolshed", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--calls", type=int, default=30, help="timed calls per server, 20/200 KB")
    ap.add_argument("--big-calls", type=int, default=None,
                    help="timed calls per server for the 2 MB page (default: max(3, calls / 6))")
    ap.add_argument("--json", type=Path, default=None, help="write the summary rows here")
    a = ap.parse_args()
    big_calls = a.big_calls if a.big_calls is not None else max(3, a.calls // 6)
    a.toolshed, a.work = a.toolshed.resolve(), a.work.resolve()
    a.work.mkdir(parents=True, exist_ok=True)
    ws = a.work / "ws"
    ws.mkdir(exist_ok=True)
    config = a.work / "web-bench.toml"
    config.write_text(
        '[policy]\nautonomy = "full"\nallow_http = true\n\n'
        '[web]\nallow_loopback_for_tests = ["127.0.0.1"]\nmax_page_bytes = 10000000\n\n'
        # Return whole pages, as the reference does, instead of cutting at 64 KiB.
        '[limits]\nmax_output_bytes = 4000000\n'
    )
    plain = a.work / "web-bench-default.toml"
    plain.write_text('[policy]\nautonomy = "full"\nallow_http = true\n')
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "LANG", "USER")}
    env["TOOLSHED_DATA_DIR"] = str(a.work / "data")
    env["XDG_CONFIG_HOME"] = str(a.work / "no-user-config")

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    errlog = open(a.work / "web-bench.stderr", "w")
    servers = {
        "toolshed": (Raw([str(a.toolshed), "--workspace", str(ws), "--config", str(config), "mcp"],
                         env, ws, errlog), "web_fetch", "max_chars", 1_000_000),
        "reference": (Raw([sys.executable, "-m", "mcp_server_fetch", "--allow-private-ips",
                           "--ignore-robots-txt"], env, ws, errlog), "fetch", "max_length", 999_999),
    }
    for name, (raw, tool, _, _) in servers.items():
        tools = raw.handshake()
        if tool not in tools:
            raise SystemExit(f"{name} has no {tool} tool (it has {tools})")

    samples: dict[str, dict[str, list[float]]] = {n: {} for n in servers}
    chars: dict[str, dict[str, int]] = {n: {} for n in servers}
    seq = 0
    for label, size in SIZES.items():
        path = label.replace(" ", "_")
        # The reference spends tens of seconds on a 2 MB page: fewer calls there.
        calls = a.calls if size < 1_000_000 else big_calls
        warmup = 3 if size < 1_000_000 else 1
        for i in range(calls + warmup):
            for name, (raw, tool, limit_arg, limit) in servers.items():
                seq += 1
                url = f"http://127.0.0.1:{port}/{path}?n={seq}"
                started = time.perf_counter()
                is_error, text = raw.call(tool, {"url": url, limit_arg: limit})
                took = time.perf_counter() - started
                if is_error:
                    raise SystemExit(f"{name} failed on {url}: {text[:500]}")
                if i >= warmup:
                    samples[name].setdefault(label, []).append(took)
                chars[name][label] = len(text)
        print(f"{label}: done", file=sys.stderr)
    peaks = {name: raw.peak_rss_kib() for name, (raw, *_rest) in servers.items()}
    for raw, *_rest in servers.values():
        raw.close()

    # Posture, not speed: does each server refuse cloud metadata by default?
    refusals = {}
    for name, argv, tool in [
        ("toolshed", [str(a.toolshed), "--workspace", str(ws), "--config", str(plain), "mcp"], "web_fetch"),
        ("reference", [sys.executable, "-m", "mcp_server_fetch", "--ignore-robots-txt"], "fetch"),
    ]:
        raw = Raw(argv, env, ws, errlog)
        raw.handshake()
        is_error, text = raw.call(tool, {"url": "http://169.254.169.254/latest/meta-data/"})
        refusals[name] = {"refused": is_error, "message": text[:200]}
        raw.close()
    httpd.shutdown()

    def median_ms(xs: list[float]) -> float:
        return statistics.median(xs) * 1000

    def p90_ms(xs: list[float]) -> float:
        return sorted(xs)[int(len(xs) * 0.9) - 1] * 1000

    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{a.calls} calls per size and server ({big_calls} for 2 MB), alternating.\n")
    print("| page | toolshed web_fetch median (p90) | reference fetch median (p90) | toolshed / reference | chars toolshed / reference |")
    print("| --- | --- | --- | --- | --- |")
    for label in SIZES:
        t, r = samples["toolshed"][label], samples["reference"][label]
        print(f"| {label} | {median_ms(t):.1f} ms ({p90_ms(t):.1f}) | {median_ms(r):.1f} ms ({p90_ms(r):.1f}) "
              f"| {median_ms(t) / median_ms(r):.4f}× ({median_ms(r) / median_ms(t):.0f}× faster) "
              f"| {chars['toolshed'][label]:,} / {chars['reference'][label]:,} |")
    print(f"\nPeak RSS after all calls: toolshed {peaks['toolshed'] / 1024:.1f} MiB, "
          f"reference {peaks['reference'] / 1024:.1f} MiB.")
    for name, r in refusals.items():
        print(f"\n{name} on http://169.254.169.254/ by default: {'refused' if r['refused'] else 'FETCHED'}"
              f" — {r['message'][:120]!r}")
    if a.json is not None:
        rows = []
        for label, size in SIZES.items():
            t, r = samples["toolshed"][label], samples["reference"][label]
            n = a.calls if size < 1_000_000 else big_calls
            rows.append({
                "label": f"{label} page, median of {n} calls",
                "unit": "ms",
                "toolshed": median_ms(t),
                "reference_name": "mcp-server-fetch",
                "reference": median_ms(r),
                "detail": (f"p90 {p90_ms(t):.1f} / {p90_ms(r):.1f} ms; " if n >= 10 else "")
                + f"chars {chars['toolshed'][label]:,} / {chars['reference'][label]:,}",
            })
        rows.append({
            "label": "peak RSS after all calls",
            "unit": "MiB",
            "toolshed": peaks["toolshed"] / 1024,
            "reference_name": "mcp-server-fetch",
            "reference": peaks["reference"] / 1024,
        })
        notes = [f"{name} on http://169.254.169.254/ by default: "
                 f"{'refused' if r['refused'] else 'FETCHED'}" for name, r in refusals.items()]
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({
            "bench": "web",
            "calls": a.calls,
            "big_calls": big_calls,
            "reference_version": _version("mcp-server-fetch"),
            "python": platform.python_version(),
            "rows": rows,
            "notes": notes,
        }, indent=1) + "\n")
    (a.work / "web.json").write_text(json.dumps(
        {"samples": samples, "chars": chars, "peak_rss_kib": peaks, "refusals": refusals}, indent=1))


def _version(package: str) -> str:
    try:
        from importlib.metadata import version

        return version(package)
    except Exception:  # noqa: BLE001
        return "unknown"


if __name__ == "__main__":
    main()
