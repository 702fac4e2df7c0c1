"""`basra` whose host waits SECONDS, not 40, for a countersignature or a step of the hidden deal it is owed.

    python short_waits_host.py SECONDS [basra's arguments]

For `basra conformance host --sign-wait SECONDS`: the cases that wait the host
out then take seconds, not minutes, and check the same ending.  The 40 seconds
themselves are held by the table's tests, in trio's virtual time
(tests/host/test_liveness.py, tests/host/test_stateful.py).
"""

from __future__ import annotations

import sys

from basra_net.cli import main
from basra_net.host import table

table.SIGN_WAIT = table.STEP_WAIT = float(sys.argv.pop(1))
sys.exit(main(sys.argv[1:]))
