#!/usr/bin/env python3
"""Times `tools/call` round trips against an MCP server over stdio (the shell bench's helper).

Usage:
    mcp_client.py warm|cold RUNS CALLS_JSON -- SERVER_COMMAND...

CALLS_JSON is a list of {"label": ..., "tool": ..., "arguments": {...}}.

warm: the server is started once and initialized; every call is made 3 times to warm up, then
RUNS times timed, one at a time (send the request, wait for its response).
cold: for every call, RUNS times: start the server, initialize, make the call, stop; the time is
from the start of the process to the call's response.

Prints one JSON object on stdout:
{"server": {...serverInfo...}, "calls": {label: {"median_ms", "min_ms", "error", "bytes"}}}.

Standard library only: the wire format is newline-delimited JSON-RPC 2.0 (the MCP stdio
transport), so the same client drives any server, whatever SDK it is built on.
"""

import json
import statistics
import subprocess
import sys
import time

PROTOCOL = "2025-06-18"


class Server:
    def __init__(self, argv):
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed its output during {method}")
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not a protocol line
            if msg.get("id") == rid and ("result" in msg or "error" in msg):
                return msg
            # Notifications (logging, progress) and server requests are skipped.

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()


def outcome(reply):
    """(error or None, bytes of text) of a tools/call reply."""
    if "error" in reply:
        return str(reply["error"]), 0
    result = reply["result"]
    text = "".join(
        c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)
    )
    return (text[:300] if result.get("isError") else None), len(text.encode())


def start(argv):
    server = Server(argv)
    init = server.request(
        "initialize",
        {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "toolshed-bench", "version": "0"},
        },
    )
    if "error" in init:
        raise RuntimeError(f"initialize failed: {init['error']}")
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return server, init["result"].get("serverInfo", {})


def summary(times, reply):
    error, size = outcome(reply)
    return {
        "median_ms": statistics.median(times) * 1000,
        "min_ms": min(times) * 1000,
        "error": error,
        "bytes": size,
    }


def main():
    if len(sys.argv) < 6 or sys.argv[4] != "--" or sys.argv[1] not in ("warm", "cold"):
        sys.exit(__doc__)
    mode = sys.argv[1]
    runs = int(sys.argv[2])
    calls = json.loads(sys.argv[3])
    argv = sys.argv[5:]
    out = {"calls": {}}
    try:
        if mode == "warm":
            server, out["server"] = start(argv)
            try:
                for call in calls:
                    params = {"name": call["tool"], "arguments": call["arguments"]}
                    for _ in range(3):
                        reply = server.request("tools/call", params)
                    times = []
                    for _ in range(runs):
                        t0 = time.perf_counter()
                        reply = server.request("tools/call", params)
                        times.append(time.perf_counter() - t0)
                    out["calls"][call["label"]] = summary(times, reply)
            finally:
                server.close()
        else:
            for call in calls:
                params = {"name": call["tool"], "arguments": call["arguments"]}
                times = []
                for _ in range(runs + 1):
                    t0 = time.perf_counter()
                    server, out["server"] = start(argv)
                    try:
                        reply = server.request("tools/call", params)
                        times.append(time.perf_counter() - t0)
                    finally:
                        server.close()
                # The first start warms the page cache; it is not counted.
                out["calls"][call["label"]] = summary(times[1:], reply)
    except Exception as e:  # reported to the bench, which prints why
        out["error"] = str(e)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
