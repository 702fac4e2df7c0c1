"""The `basra conformance` subcommands: arguments in, a report out, the exit status of the report."""

from __future__ import annotations

import argparse
from functools import partial

import trio


def run_conformance_command(args: argparse.Namespace) -> int:
    if args.side == "host":
        from ..client.address import parse_address
        from .host_check import Target, check_host

        try:
            host, port = parse_address(args.address)
        except ValueError as err:
            print(f"basra conformance host: {err}")
            return 2
        target = Target(host, port, tls=not args.plain, code=args.code)
        return trio.run(partial(check_host, target, command=args.exec, sign_wait=args.sign_wait))
    from .client_check import ClientCheckSettings, check_client

    settings = ClientCheckSettings(port=args.port, tls=not args.plain, command=args.exec, target=args.target)
    return trio.run(check_client, settings)
