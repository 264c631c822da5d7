"""Sequential `tools/call`s of `calc` with the official MCP Python SDK client
over Streamable HTTP (one session), as an agent's client makes them. Prints
the milliseconds of each timed call as JSON. Usage: python http_round_trip.py URL N
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

WARMUP = 10


async def main(url: str, n: int) -> None:
    ms = []
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for i in range(WARMUP + n):
            started = time.perf_counter()
            result = await session.call_tool("calc", {"op": "mul", "a": 6, "b": i})
            took = (time.perf_counter() - started) * 1e3
            if result.is_error:
                raise SystemExit(f"the benchmarked call failed: {result}")
            if i >= WARMUP:
                ms.append(took)
    print(json.dumps({"client": "python-sdk", "ms": ms}))


asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200))
