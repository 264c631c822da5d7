"""Sequential `tools/call`s of `calc` with the official MCP Python SDK client
over stdio, against several servers at once in interleaved rounds (the
machine's speed drifts; taking turns compares like with like). The servers
come as JSON on stdin: {"round": R, "n": N, "servers": [{"name", "command",
"args", "env"}]}. Prints, as JSON, the microseconds of each timed call by
server. Usage: python stdio_round_trip.py < spec.json
"""

import asyncio
import json
import sys
import time
from contextlib import AsyncExitStack

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(spec: dict) -> None:
    rounds = -(-spec["n"] // spec["round"])
    us = {server["name"]: [] for server in spec["servers"]}
    async with AsyncExitStack() as stack:
        sessions = []
        for server in spec["servers"]:
            params = StdioServerParameters(command=server["command"], args=server["args"], env=server["env"])
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append((server["name"], session))
        # Round 0 warms up and is not kept.
        for r in range(rounds + 1):
            for name, session in sessions:
                for _ in range(spec["round"]):
                    started = time.perf_counter()
                    result = await session.call_tool("calc", {"op": "mul", "a": 6, "b": 7})
                    took = (time.perf_counter() - started) * 1e6
                    if result.is_error:
                        raise SystemExit(f"the benchmarked call failed on {name}: {result}")
                    if r > 0:
                        us[name].append(took)
    print(json.dumps({"client": "python-sdk", "us": us}))


asyncio.run(main(json.load(sys.stdin)))
