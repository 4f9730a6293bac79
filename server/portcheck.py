"""`make run`'s first step: fail loudly when the port is taken, before `langgraph dev` starts.

`langgraph dev` (langgraph-api's `_resolve_port`) moves to a free port with only a log line when the
one asked for is in use, while every README command and Studio link says 2024. This checks the port
the way it does (a bind with ``SO_REUSEADDR``) and exits 1 with a message naming the way out, or
prints the URL the server will answer on.

    python -m server.portcheck [--host 127.0.0.1] [--port 2024]
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Sequence

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 2024


def port_free(host: str, port: int) -> bool:
    """Whether ``host:port`` can be bound now (as `langgraph dev` decides it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
        except OSError:
            return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="portcheck", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    if not port_free(args.host, args.port):
        print(
            f"make run: port {args.port} on {args.host} is already in use (another `make run`? `lsof -i :{args.port}` "
            f"shows what holds it). `langgraph dev` would silently move to another port while the README's commands "
            f"say {args.port}: stop that process, or choose a port: `PORT=8123 make run` "
            "(then LIVE=http://127.0.0.1:8123 for the README's commands)",
            file=sys.stderr,
        )
        return 1
    print(f"Agent Server: http://{args.host}:{args.port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
