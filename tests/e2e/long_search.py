"""`basra` whose search for tables on the LAN listens SECONDS, not 2.

    python long_search.py SECONDS [basra's arguments]

For a test that ends the search with Ctrl-C: with a search that outlasts the
test, the Ctrl-C finds it still searching however loaded the machine is.
"""

from __future__ import annotations

import sys

from basra_net.cli import main
from basra_net.client import discovery

discovery.BROWSE_SECONDS = float(sys.argv.pop(1))
sys.exit(main(sys.argv[1:]))
