"""examples/minimal_client.py with one flaw, for `basra conformance client` to catch and name.

    python broken_client.py FLAW [the minimal client's arguments]

FLAW is one of: no_pong (never answers a ping), no_resume (gives up when its
connection breaks), trusting (never finds a deal unfair), resume_after_end
(reads on after match_end, and takes the close that follows for a break to resume from).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("minimal_client", Path(__file__).parents[2] / "examples" / "minimal_client.py")
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)

flaw = sys.argv.pop(1)
if flaw == "no_pong":
    honest_send = client.Connection.send
    client.Connection.send = lambda self, message: None if message["type"] == "pong" else honest_send(self, message)
elif flaw == "no_resume":

    def give_up(conn, seat):
        raise client.ProtocolFailure("this client does not resume")

    client.resume = give_up
elif flaw == "trusting":
    client.check_game = lambda *args: []
elif flaw == "resume_after_end":
    honest_receive = client.Connection.receive

    def read_on_after_the_end(self):
        message = honest_receive(self)
        if message["type"] == "match_end":
            self.send({"type": "leave", "reason": "the match is over"})
            honest_receive(self)  # the host's close: ConnectionLost, and the client resumes
        return message

    client.Connection.receive = read_on_after_the_end
else:
    sys.exit(f"unknown flaw {flaw!r}")
sys.exit(client.main(sys.argv))
