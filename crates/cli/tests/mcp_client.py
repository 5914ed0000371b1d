#!/usr/bin/env python3
"""Drive `toolshed mcp` with the official Python MCP SDK (PyPI `mcp`).

    mcp_client.py stdio TOOLSHED_BIN WORKSPACE MODE
    mcp_client.py http URL MODE [TOKEN]

MODE is the SDK's connect mode: `auto` (probe `server/discover`, the 2026-07-28 protocol when
the server speaks it) or `legacy` (the `initialize` handshake). The script runs one scenario
and prints one JSON object per line, each with a `check` name; the Rust test asserts on them.
It never decides pass/fail itself beyond crashing on an unexpected exception.
"""

from __future__ import annotations

import json
import warnings
import os
import random
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


# Logging is deprecated from protocol 2026-07-28 (SEP-2577) but tested here on purpose.
warnings.filterwarnings("ignore", message=".*logging capability is deprecated.*")


def emit(check: str, **fields: Any) -> None:
    print(json.dumps({"check": check, **fields}, default=str), flush=True)


def texts(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def sleeping(marker: str) -> bool:
    """Whether a `sleep MARKER` process exists."""
    wanted = b"sleep\0" + marker.encode() + b"\0"
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().endswith(wanted):
                    return True
        except OSError:
            pass
    return False


async def wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        await anyio.sleep(0.05)
    return predicate()


async def scenario(make_client, mode: str, transport: str) -> None:
    logs: list[dict[str, Any]] = []
    asked: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    async def on_elicit(_ctx, params):
        message = getattr(params, "message", "")
        asked.append(message)
        # Approve only the deletion of `drop/`; refuse everything else.
        return types.ElicitResult(action="accept", content={"approve": "drop" in message})

    client = make_client(
        mode=mode,
        logging_callback=on_log,
        elicitation_callback=on_elicit,
        log_level="info" if mode != "legacy" else None,
    )
    async with client:
        emit(
            "connected",
            protocol=client.protocol_version,
            server=client.server_info.name if client.server_info else None,
        )
        if mode == "legacy":
            await client.set_logging_level("info")

        # tools/list with annotations.
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        file_read = next(t for t in listed.tools if t.name == "file_read")
        ann = file_read.annotations
        emit(
            "tools",
            names=names,
            file_read={
                "readOnlyHint": ann.read_only_hint if ann else None,
                "destructiveHint": ann.destructive_hint if ann else None,
                "idempotentHint": ann.idempotent_hint if ann else None,
                "openWorldHint": ann.open_world_hint if ann else None,
                "required": file_read.input_schema.get("required"),
            },
        )

        # A write and a read.
        wrote = await client.call_tool(
            "file_write", {"path": "notes/hello.txt", "content": "hi from python\n"}
        )
        emit("write", is_error=wrote.is_error, text=texts(wrote))
        read = await client.call_tool("file_read", {"path": "notes/hello.txt"})
        emit("read", is_error=read.is_error, text=texts(read))

        # A refusal is a result, not an exception.
        refused = await client.call_tool("file_read", {"path": "../etc/passwd"})
        emit(
            "refusal",
            is_error=refused.is_error,
            text=texts(refused),
            structured=refused.structured_content,
        )

        # An unknown tool is a protocol error.
        try:
            await client.call_tool("no_such_tool", {})
            emit("unknown_tool", code=None)
        except MCPError as e:
            emit("unknown_tool", code=e.error.code, message=e.error.message)

        # Approval: a recursive delete asks; the elicitation answers yes for `drop`, no for `keep`.
        for d in ("keep", "drop"):
            await client.call_tool("make_dir", {"path": f"{d}/inner"})
        keep = await client.call_tool("delete_file", {"path": "keep", "recursive": True})
        drop = await client.call_tool("delete_file", {"path": "drop", "recursive": True})
        emit(
            "approval",
            asked=len(asked),
            keep={"is_error": keep.is_error, "text": texts(keep)},
            drop={"is_error": drop.is_error, "text": texts(drop)},
        )

        # Progress and cancellation of a long call.
        progress: list[dict[str, Any]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append({"progress": value, "message": message})

        if "shell" in names:
            done = await client.call_tool(
                "shell",
                {"command": "for i in 1 2 3 4 5; do echo tick $i; sleep 0.3; done"},
                progress_callback=on_progress,
            )
            emit("progress", tool="shell", is_error=done.is_error, notifications=progress)
            # A duration no other process uses, to find the child in /proc afterwards.
            marker = f"29.{random.randrange(10**6):06d}"
            long_name, long_args, cancel_after = "shell", {"command": f"sleep {marker}"}, 1.0
        else:
            emit(
                "progress",
                tool=None,
                skipped="no `shell` tool is registered, and no other tool streams output",
            )
            marker = None
            long_name = "grep"
            long_args = {"pattern": "never[0-9]{9}matches", "path": "big"}
            cancel_after = 0.2

        started = time.monotonic()
        finished = None
        with anyio.move_on_after(cancel_after) as scope:
            finished = await client.call_tool(long_name, long_args, progress_callback=on_progress)
        elapsed = time.monotonic() - started

        def audited() -> list[dict[str, Any]]:
            return [
                log["data"]
                for log in logs
                if isinstance(log["data"], dict) and log["data"].get("tool") == long_name
            ]

        # The audit record of the cancelled call arrives as a log notification, except over
        # stateless (2026-07-28) HTTP, where it would need the response stream the
        # cancellation closed.
        stateless = transport == "http" and mode != "legacy"
        await wait_for(
            lambda: any(a.get("outcome") != "ok" for a in audited()), 0.5 if stateless else 5.0
        )
        # Cancelling must stop the work on the server: the shell's `sleep` is gone.
        killed = None
        if marker is not None:
            killed = await wait_for(lambda: not sleeping(marker), 5.0)
        still = await client.call_tool("file_read", {"path": "notes/hello.txt"})
        emit(
            "cancel",
            tool=long_name,
            cancelled=scope.cancelled_caught,
            finished_first=finished is not None and not finished.is_error,
            elapsed=elapsed,
            killed=killed,
            audit=[{"outcome": a.get("outcome"), "duration_ms": a.get("duration_ms")} for a in audited()],
            alive=not still.is_error,
        )
        emit(
            "logs",
            count=len(logs),
            loggers=sorted({str(log["logger"]) for log in logs}),
            outcomes=[log["data"].get("outcome") for log in logs if isinstance(log["data"], dict)],
        )


def main() -> None:
    kind = sys.argv[1]
    if kind == "stdio":
        binary, workspace, mode = sys.argv[2], sys.argv[3], sys.argv[4]
        params = StdioServerParameters(
            command=binary,
            args=["--workspace", workspace, "mcp"],
            # Keep the user's own configuration out of the test.
            env={"XDG_CONFIG_HOME": os.path.join(workspace, ".no-user-config")},
            cwd=workspace,
        )

        def make_client(**kw):
            return Client(params, **kw)

    elif kind == "http":
        url, mode = sys.argv[2], sys.argv[3]
        token = sys.argv[4] if len(sys.argv) > 4 else None

        def make_client(**kw):
            if token is None:
                return Client(url, **kw)
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {token}"},
                timeout=httpx2.Timeout(30.0, read=300.0),
            )
            return Client(streamable_http_client(url, http_client=http), **kw)

    else:
        raise SystemExit(f"unknown transport {kind!r}")
    anyio.run(scenario, make_client, mode, kind)


if __name__ == "__main__":
    main()
