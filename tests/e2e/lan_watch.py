"""Follows the tables announced on the LAN with the browser `basra join` uses, printing a line per change:

    watching                                       once browsing has started
    seen PORT seats=N tables=M INSTANCE            a table appears, or its announcement changes
    gone INSTANCE                                  a table's announcement is withdrawn

Run it as a script (in a network namespace, by the discovery tests and benchmarks/discovery.py); stop it with a signal.
"""

from __future__ import annotations

import trio

from basra_net.client.discovery import FoundTable, open_browser


async def watch() -> None:
    shown: dict[str, FoundTable] = {}
    async with open_browser() as live:

        def show(tables: dict[str, FoundTable]) -> None:
            for name, table in sorted(tables.items()):
                if shown.get(name) != table:
                    a = table.announcement
                    print("seen", table.port, f"seats={a.seats}", f"tables={a.tables}", name, flush=True)
            for name in sorted(set(shown) - set(tables)):
                print("gone", name, flush=True)
            shown.clear()
            shown.update(tables)

        print("watching", flush=True)
        await live.follow(show)


if __name__ == "__main__":
    trio.run(watch)
