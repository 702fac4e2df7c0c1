"""`basra join` with one flaw of version 2, for `basra conformance client` to catch and name.

    python broken_join.py FLAW [basra's arguments]

FLAW is one of: trusting_signatures (takes the host's signature of a game
or the result without checking it, and countersigns all the same);
no_open_again (after a resume, sends again every answer but its `open`
steps of the hidden deal, against 5.8 rule 6); or version_2_only, no flaw:
a client that offers version 2 alone, as the protocol allows (5.2), which
the checker must not fail.
"""

from __future__ import annotations

import sys

from basra_net.cli import main
from basra_net.protocol.connection import ClientConnection
from basra_net.protocol.messages import Open
from basra_net.protocol.record import ChannelRecord, RecordError

flaw = sys.argv.pop(1)
if flaw == "trusting_signatures":
    honest_host_sig = ChannelRecord._host_sig

    def trusting(self, message):
        try:
            honest_host_sig(self, message)
        except RecordError:
            self._countersign, self._owed = self._owed, None  # as if it had verified

    ChannelRecord._host_sig = trusting
elif flaw == "no_open_again":
    honest_resend = ClientConnection.resend

    def forgetful(self):
        self.match.unconfirmed_steps = [step for step in self.match.unconfirmed_steps if not isinstance(step, Open)]
        return honest_resend(self)

    ClientConnection.resend = forgetful
elif flaw == "version_2_only":
    from basra_net.client import session

    session.PROTOCOL_VERSIONS = (2,)
else:
    raise SystemExit(f"unknown flaw {flaw}")
sys.exit(main(sys.argv[1:]))
